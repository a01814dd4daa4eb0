#!/usr/bin/env python3
"""ticdc_rs against the usual ways of turning Canal-JSON into typed columns.

Generates N TiCDC Canal-JSON messages (deterministic seed, ~1.2 KB each: a dozen mixed-type
columns, 60% INSERT / 30% UPDATE with the full old row / 10% DELETE, `_tidb.commitTs`), then times
converting them to the same typed columns -- `_op`, `_commit_ts`, the row image with real types
(int32, decimal(20,0) for BIGINT UNSIGNED, decimal(12,2), timestamp, timestamp UTC, date, double,
int8, text, bytes, json text) and `_before`, a struct with the old row of an UPDATE:

  ticdc_rs          ticdc_rs.Decoder(layout="typed"), one thread, batches of 10,000 (the baseline;
                    also with 2 Python threads, one Decoder each)
  duckdb            read_ndjson on an NDJSON file, explicit columns + casts (threads=2 and 1);
                    varbinary decoded in SQL, and again with that one step done in Arrow instead
  polars            Series.str.json_decode(dtype) + casts
  orjson            orjson.loads loop + pyarrow arrays (+ pyarrow casts)
  spark from_json   local[2], Parquet with a `value` binary column, from_json + casts
  spark+ticdc_rs    the same Spark job with df.mapInArrow(ticdc_rs.Decoder(...), dec.schema)

With --protocols (default on), the same events are re-encoded by ticdc_rs's own encoders into
Open Protocol, Craft, Simple JSON and Simple Avro messages, and each corpus is decoded to the
same typed columns; the Open Protocol corpus is also decoded by a plain Python loop (struct
framing + json.loads + pyarrow), what users write today since no JSON reader understands the
framing.

Memory (default on; --no-memory skips it): each in-process peer runs once more in a child process
of its own that loads the corpus, resets the kernel's peak-RSS mark (Linux `/proc/self/clear_refs`)
and reports how far its resident memory rose above what it held before: the output plus
everything transient, whatever allocator made it (Rust's, Arrow's pool, Python objects, DuckDB's,
Polars'). Spark's JVM is left out.

Both Spark jobs are forced to completion with the `noop` sink. Spark is optional (--no-spark);
--spark-overhead also times the parts of the mapInArrow job that are Spark's own.
Every peer is checked against ticdc_rs: same row count, and the same values (in-memory peers:
every column compared; Spark: a spot row plus column checksums).

    .venv/bin/python benches/peers.py                  # N=200,000
    .venv/bin/python benches/peers.py -n 50000 --no-spark --json /tmp/peers.json

Varbinary values travel as ISO-8859-1 text (one code point per byte); every peer turns them
back into bytes. Timestamps are read as UTC (the changefeed's time zone here).
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import decimal
import functools
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from operator import itemgetter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import ticdc_rs

SCHEMA_NAME, TABLE_NAME = "bench", "orders"
TABLE = f"{SCHEMA_NAME}.{TABLE_NAME}"

# name, Canal-JSON mysqlType (default mode), typed-layout Arrow type
COLUMNS = [
    ("id", "int", pa.int32()),
    ("user_id", "bigint unsigned", pa.decimal128(20, 0)),
    ("name", "varchar", pa.string()),
    ("amount", "decimal", pa.decimal128(12, 2)),
    ("created_at", "datetime", pa.timestamp("us")),
    ("updated_at", "timestamp", pa.timestamp("us", tz="UTC")),
    ("birthday", "date", pa.date32()),
    ("score", "double", pa.float64()),
    ("status", "tinyint", pa.int8()),
    ("note", "text", pa.string()),
    ("payload", "varbinary", pa.binary()),
    ("attrs", "json", pa.string()),
]
NAMES = [c[0] for c in COLUMNS]
TYPED_SCHEMA = pa.schema([pa.field(n, t) for n, _, t in COLUMNS])
MYSQL_TYPES = {n: m for n, m, _ in COLUMNS}
SQL_TYPES = {
    "int": 4, "bigint unsigned": -5, "varchar": 12, "decimal": 3, "datetime": 93, "timestamp": 93,
    "date": 91, "double": 8, "tinyint": -6, "text": 2005, "varbinary": 2004, "json": 12,
}

# --------------------------------------------------------------------------------------------
# Messages (the same kind as benches/common/mod.rs makes in Rust)

PEOPLE = [
    "John Smith", "Mary Johnson", "Zoë Müller", "José García", "François Dupont", "Łukasz Wiśniewski",
    "Søren Kierkegaard", "山田 太郎", "王小明", "Иван Петров", "Ελένη Παπαδοπούλου", "김민준",
    "Ahmed Ali 😀", "Priya Patel",
]
WORDS = [
    "order", "shipped", "customer", "requested", "express", "delivery", "warehouse", "Berlin", "café",
    "naïve", "résumé", "東京", "返品", '"gift"', "wrap", "<b>urgent</b>", "&", "invoice", "paid",
    "pending", "refund", "coupon", "size:XL", "color=blue",
]
TAGS = ["vip", "new", "promo", "b2b", "retail", "ü-tag"]


def _datetime(rng: random.Random, micros: bool) -> str:
    s = (
        f"{rng.randrange(2015, 2026):04d}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} "
        f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
    )
    return f"{s}.{rng.randrange(1_000_000):06d}" if micros else s


def _amount(rng: random.Random) -> str:
    cents = rng.randrange(100_000_000_000) - 2_000_000_000  # decimal(12,2), mostly positive
    sign, c = ("-" if cents < 0 else ""), abs(cents)
    return f"{sign}{c // 100}.{c % 100:02d}"


def _note(rng: random.Random):
    if rng.randrange(100) < 5:
        return None
    target, parts, size = rng.randrange(20, 120), [], 0
    while size < target:
        w = rng.choice(WORDS)
        sep = ("\n" if rng.randrange(100) < 3 else " ") if parts else ""
        parts.append(sep + w)
        size += len((sep + w).encode())
    return "".join(parts)


def _payload(rng: random.Random):
    if rng.randrange(100) < 5:
        return None
    return bytes(rng.getrandbits(8) for _ in range(rng.randrange(8, 33)))


def _attrs(rng: random.Random) -> str:
    tags = ", ".join(f'"{rng.choice(TAGS)}"' for _ in range(rng.randrange(4)))
    channel, items = rng.choice(["web", "app", "store"]), rng.randrange(1, 20)
    gift = "true" if rng.randrange(100) < 20 else "false"
    return f'{{"channel": "{channel}", "items": {items}, "tags": [{tags}], "gift": {gift}}}'


def _double(x: float) -> str:
    s = repr(x)
    return s if "e" not in s else f"{x:.17f}".rstrip("0")


def _row(rng: random.Random, id_: int) -> dict:
    user_id = rng.randrange(1 << 63, (1 << 64) - 1) if rng.randrange(100) < 5 else rng.randrange(1, 1 << 40)
    return {
        "id": str(id_),
        "user_id": str(user_id),
        "name": f"{rng.choice(PEOPLE)} #{rng.randrange(10_000)}",
        "amount": _amount(rng),
        "created_at": _datetime(rng, False),
        "updated_at": _datetime(rng, True),
        "birthday": f"{rng.randrange(1950, 2010):04d}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
        "score": _double(rng.random() * 1000.0),
        "status": str(rng.randrange(6)),
        "note": _note(rng),
        "payload": _payload(rng),
        "attrs": _attrs(rng),
    }


def _wire(row: dict) -> dict:
    # Binary columns: each byte becomes the code point of the same number (ISO-8859-1).
    p = row["payload"]
    return {**row, "payload": None if p is None else p.decode("latin-1")}


def _sql_types(row: dict) -> dict:
    out = {n: SQL_TYPES[MYSQL_TYPES[n]] for n in NAMES}
    if int(row["user_id"]) > (1 << 63) - 1:
        out["user_id"] = 3  # unsigned BIGINT above the signed range is DECIMAL
    return out


def generate(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    commit_ts = 449_543_017_000_000_000
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    out = []
    for _ in range(n):
        commit_ts += rng.randrange(1, 1 << 20)
        id_ = rng.randrange(1, 10_000_000)
        roll = rng.randrange(100)
        row = _row(rng, id_)
        old = None
        kind = "INSERT" if roll < 60 else "UPDATE" if roll < 90 else "DELETE"
        if kind == "UPDATE":
            old = dict(row, amount=_amount(rng), updated_at=_datetime(rng, True), status=str(rng.randrange(6)))
            if rng.randrange(100) < 30:
                old["note"] = _note(rng)
        es = commit_ts >> 18
        msg = {  # field order as tiflow's DML writer
            "id": 0, "database": SCHEMA_NAME, "table": TABLE_NAME, "pkNames": ["id"], "isDdl": False,
            "type": kind, "es": es, "ts": es + 3, "sql": "",
            "sqlType": _sql_types(row), "mysqlType": MYSQL_TYPES,
            "old": None if old is None else [_wire(old)],
            "data": [_wire(row)],
            "_tidb": {"commitTs": commit_ts},
        }
        # TiCDC's writer is HTML-safe; <, >, & only occur inside strings here.
        text = dumps(msg).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        out.append(text.encode())
    return out


# --------------------------------------------------------------------------------------------
# Helpers


def latin1_to_binary(arr: pa.Array) -> pa.Array:
    """Vectorised ISO-8859-1 encode of a string array whose code points are all <= U+00FF."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = arr.cast(pa.large_string())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    start = int(offsets[0])
    data_buffer = arr.buffers()[2]
    if data_buffer:
        data = np.frombuffer(data_buffer, dtype=np.uint8)[start : int(offsets[-1])]
    else:
        data = np.zeros(0, np.uint8)
    lead = data >= 0xC0
    if np.any(data >= 0xC4):
        raise ValueError("code point above U+00FF in a binary column")
    out = data.copy()
    hi = np.flatnonzero(data == 0xC3) + 1  # U+00C0..U+00FF: continuation byte + 0x40
    out[hi] += 0x40
    out = out[~lead]
    leads_before = np.concatenate(([0], np.cumsum(lead, dtype=np.int64)))
    rel = offsets - start
    new_offsets = rel - leads_before[rel]
    validity = None
    if arr.null_count:
        validity = pc.is_valid(arr).buffers()[1]
    return pa.Array.from_buffers(
        pa.large_binary(), n, [validity, pa.py_buffer(new_offsets), pa.py_buffer(out)], null_count=arr.null_count
    ).cast(pa.binary())


def mb(nbytes: int) -> float:
    return nbytes / 1e6


# --------------------------------------------------------------------------------------------
# Peers. Each returns a pyarrow Table with _op, _commit_ts, the 12 columns and _before.


def run_ticdc(batches: list[pa.RecordBatch]) -> pa.Table:
    dec = ticdc_rs.Decoder("canal-json", layout="typed", table=TABLE, schema=TYPED_SCHEMA)
    return pa.Table.from_batches([dec.decode(b) for b in batches])


def run_ticdc_threads(batches: list[pa.RecordBatch], threads: int) -> pa.Table:
    """The batches split into `threads` contiguous runs, one Decoder per thread (the GIL is released)."""
    from concurrent.futures import ThreadPoolExecutor

    step = -(-len(batches) // threads)
    parts = [batches[i : i + step] for i in range(0, len(batches), step)]

    def work(part):
        dec = ticdc_rs.Decoder("canal-json", layout="typed", table=TABLE, schema=TYPED_SCHEMA)
        return [dec.decode(b) for b in part]

    with ThreadPoolExecutor(threads) as pool:
        return pa.Table.from_batches([b for out in pool.map(work, parts) for b in out])


def protocol_corpora(batches: list[pa.RecordBatch]) -> dict[str, list[pa.RecordBatch]]:
    """The canal corpus re-encoded into each other protocol (via the envelope layout)."""
    envelope = ticdc_rs.Decoder("canal-json")
    decoded = [envelope.decode(b) for b in batches]
    corpora = {}
    for protocol, options in (("open", {}), ("craft", {}), ("simple-json", {}), ("simple-avro", {})):
        try:
            enc = ticdc_rs.Encoder(protocol, **options)
        except NotImplementedError:
            continue
        corpora[protocol] = [enc.encode(b) for b in decoded]
    return corpora


def run_ticdc_protocol(protocol: str, batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    dec = ticdc_rs.Decoder(protocol, layout="typed", table=TABLE, schema=schema)
    return pa.Table.from_batches([dec.decode(b) for b in batches])


def run_open_python(batches: list[pa.RecordBatch]) -> pa.Table:
    """What users write for the Open Protocol today: framing by hand, json.loads per event."""
    import base64 as b64
    import struct

    ops, ts, rows = [], [], []
    for batch in batches:
        for key, value in zip(batch.column("key").to_pylist(), batch.column("value").to_pylist(), strict=True):
            k, v = 8, 0
            while k < len(key):
                (klen,) = struct.unpack_from(">Q", key, k)
                kj = json.loads(key[k + 8 : k + 8 + klen])
                k += 8 + klen
                (vlen,) = struct.unpack_from(">Q", value, v)
                vj = json.loads(value[v + 8 : v + 8 + vlen]) if vlen else {}
                v += 8 + vlen
                if kj["t"] != 1:
                    continue
                image = vj.get("u") or vj.get("d")
                op = "DELETE" if "d" in vj else ("UPDATE" if "p" in vj else "INSERT")
                row = {}
                for name, col in image.items():
                    val = col["v"]
                    if val is not None and col["t"] in (249, 250, 251, 252):
                        val = b64.b64decode(val)
                        if not col.get("f", 0) & 1:
                            val = val.decode()
                    row[name] = val
                ops.append(op)
                ts.append(kj["ts"])
                rows.append(row)
    # Numbers, text and bytes typed; decimals and times left as text (a lower bound on the work).
    columns = {}
    for name in rows[0] if rows else ():
        values = [r.get(name) for r in rows]
        try:
            columns[name] = pa.array(values)
        except OverflowError:  # BIGINT UNSIGNED beyond int64
            columns[name] = pa.array([None if v is None else decimal.Decimal(v) for v in values], pa.decimal128(20, 0))
    columns["_op"] = pa.array(ops)
    columns["_commit_ts"] = pa.array(ts, pa.int64())
    return pa.table(columns)


def _duck_row_struct() -> str:
    return "STRUCT(" + ", ".join(f"{n} VARCHAR" for n in NAMES) + ")[]"


DUCK_CASTS = {
    "id": "CAST({x} AS INTEGER)",
    "user_id": "CAST({x} AS DECIMAL(20,0))",
    "name": "{x}",
    "amount": "CAST({x} AS DECIMAL(12,2))",
    "created_at": "CAST({x} AS TIMESTAMP)",
    "updated_at": "CAST({x} AS TIMESTAMPTZ)",
    "birthday": "CAST({x} AS DATE)",
    "score": "CAST({x} AS DOUBLE)",
    "status": "CAST({x} AS TINYINT)",
    "note": "{x}",
    # ISO-8859-1 text back to bytes: code point of each character, as hex, unhexed.
    "payload": "unhex(array_to_string(list_transform(string_split({x}, ''), "
    "lambda c: printf('%02x', unicode(c))), ''))",
    "attrs": "{x}",
}


def duck_sql(path: str, payload_in_sql: bool = True) -> str:
    columns = {
        "type": "VARCHAR", "database": "VARCHAR", "table": "VARCHAR",
        "_tidb": "STRUCT(commitTs UBIGINT)", "data": _duck_row_struct(), "old": _duck_row_struct(),
    }
    cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in columns.items()) + "}"
    cast = lambda n, x: DUCK_CASTS[n].format(x=x) if payload_in_sql or n != "payload" else x  # noqa: E731
    row = ",\n  ".join(cast(n, f"data[1].{n}") + f" AS {n}" for n in NAMES)
    old = ", ".join(f"{n} := " + cast(n, f"old[1].{n}") for n in NAMES)
    return f"""
SELECT type AS _op, CAST(_tidb.commitTs AS BIGINT) AS _commit_ts,
  {row},
  CASE WHEN type = 'UPDATE' THEN struct_pack({old}) END AS _before
FROM read_ndjson('{path}', columns={cols}, format='newline_delimited')
WHERE database = '{SCHEMA_NAME}' AND "table" = '{TABLE_NAME}'
"""


def run_duckdb(con, sql: str, payload_in_sql: bool = True) -> pa.Table:
    t = con.sql(sql).to_arrow_table()
    return t if payload_in_sql else payload_to_binary(t)


def payload_to_binary(t: pa.Table) -> pa.Table:
    """Turns the ISO-8859-1 text of `payload` (row and `_before`) into bytes, vectorised."""
    i = t.schema.get_field_index("payload")
    t = t.set_column(i, "payload", latin1_to_binary(t["payload"]))
    before = t["_before"].combine_chunks()
    children = [latin1_to_binary(before.field(k)) if f.name == "payload" else before.field(k)
                for k, f in enumerate(before.type)]
    fields = [pa.field(f.name, pa.binary()) if f.name == "payload" else f for f in before.type]
    fixed = pa.StructArray.from_arrays(children, fields=fields, mask=pc.invert(before.is_valid()))
    return t.set_column(t.schema.get_field_index("_before"), "_before", fixed)


def polars_plan():
    import polars as pl

    row = pl.Struct({n: pl.String for n in NAMES})
    dtype = pl.Struct({
        "type": pl.String, "database": pl.String, "table": pl.String,
        "_tidb": pl.Struct({"commitTs": pl.UInt64}), "data": pl.List(row), "old": pl.List(row),
    })

    def casts(img):
        f = lambda n: img.struct.field(n)  # noqa: E731
        return [
            f("id").cast(pl.Int32).alias("id"),
            f("user_id").cast(pl.Decimal(20, 0)).alias("user_id"),
            f("name").alias("name"),
            f("amount").cast(pl.Decimal(12, 2)).alias("amount"),
            f("created_at").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us").alias("created_at"),
            f("updated_at")
            .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", time_zone="UTC")
            .alias("updated_at"),
            f("birthday").str.to_date("%Y-%m-%d").alias("birthday"),
            f("score").cast(pl.Float64).alias("score"),
            f("status").cast(pl.Int8).alias("status"),
            f("note").alias("note"),
            # Polars has no ISO-8859-1 encode: a vectorised Arrow UDF.
            f("payload")
            .map_batches(lambda s: pl.Series(latin1_to_binary(s.to_arrow())), return_dtype=pl.Binary)
            .alias("payload"),
            f("attrs").alias("attrs"),
        ]

    def run(values: pa.ChunkedArray) -> pa.Table:
        s = pl.from_arrow(values).cast(pl.String)
        df = s.str.json_decode(dtype).struct.unnest()
        df = df.filter((pl.col("database") == SCHEMA_NAME) & (pl.col("table") == TABLE_NAME))
        new, old = pl.col("data").list.first(), pl.col("old").list.first()
        out = df.select(
            pl.col("type").alias("_op"),
            pl.col("_tidb").struct.field("commitTs").cast(pl.Int64).alias("_commit_ts"),
            *casts(new),
            pl.when(pl.col("type") == "UPDATE").then(pl.struct(casts(old))).alias("_before"),
        )
        return out.to_arrow()

    return run


def run_orjson(values: pa.ChunkedArray) -> pa.Table:
    import orjson

    loads, get_row = orjson.loads, itemgetter(*NAMES)
    ops, cts, rows, olds, valid = [], [], [], [], []
    empty = (None,) * len(NAMES)
    for v in values.to_pylist():
        m = loads(v)
        if m["database"] != SCHEMA_NAME or m["table"] != TABLE_NAME:
            continue
        ops.append(m["type"])
        cts.append(m["_tidb"]["commitTs"])
        rows.append(get_row(m["data"][0]))
        old = m["old"]
        if m["type"] == "UPDATE" and old:
            olds.append(get_row(old[0]))
            valid.append(True)
        else:
            olds.append(empty)
            valid.append(False)

    def arrays(image):
        cols = list(zip(*image, strict=True)) if image else [()] * len(NAMES)
        out = []
        for (name, _, typ), col in zip(COLUMNS, cols, strict=True):
            if name == "payload":
                out.append(pa.array([None if p is None else p.encode("latin-1") for p in col], pa.binary()))
                continue
            a = pa.array(col, pa.string())
            if pa.types.is_timestamp(typ) and typ.tz:  # strings carry no zone: parse naive, label UTC
                a = a.cast(pa.timestamp("us")).cast(typ)
            elif typ != pa.string():
                a = a.cast(typ)
            out.append(a)
        return out

    before = pa.StructArray.from_arrays(arrays(olds), names=NAMES, mask=pa.array([not v for v in valid]))
    return pa.Table.from_arrays(
        [pa.array(ops, pa.string()), pa.array(cts, pa.int64()), *arrays(rows), before],
        names=["_op", "_commit_ts", *NAMES, "_before"],
    )


# --------------------------------------------------------------------------------------------
# Spark


def spark_session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("ticdc_rs-peers")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # Several input splits, so both cores work (the Parquet dump has 10,000-row row groups).
        .config("spark.sql.files.maxPartitionBytes", str(8 << 20))
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_from_json(spark, path: str):
    from pyspark.sql import functions as F

    row = "ARRAY<STRUCT<" + ", ".join(f"`{n}`: STRING" for n in NAMES) + ">>"
    ddl = (
        f"`type` STRING, `database` STRING, `table` STRING, `_tidb` STRUCT<`commitTs`: BIGINT>, "
        f"`data` {row}, `old` {row}"
    )
    casts = {
        "id": "int", "user_id": "decimal(20,0)", "amount": "decimal(12,2)", "created_at": "timestamp_ntz",
        "updated_at": "timestamp", "birthday": "date", "score": "double", "status": "tinyint",
    }

    def image(img):
        out = []
        for n in NAMES:
            x = img[n]
            if n == "payload":
                x = F.encode(x, "ISO-8859-1")
            elif n in casts:
                x = x.cast(casts[n])
            out.append(x.alias(n))
        return out

    m = spark.read.parquet(path).select(F.from_json(F.col("value").cast("string"), ddl).alias("m"))
    m = m.where((F.col("m.database") == SCHEMA_NAME) & (F.col("m.table") == TABLE_NAME))
    return m.select(
        F.col("m.type").alias("_op"),
        F.col("m._tidb.commitTs").alias("_commit_ts"),
        *image(F.col("m.data")[0]),
        F.when(F.col("m.type") == "UPDATE", F.struct(*image(F.col("m.old")[0]))).alias("_before"),
    )


def spark_ticdc(spark, path: str):
    dec = ticdc_rs.Decoder("canal-json", layout="typed", table=TABLE, schema=TYPED_SCHEMA)
    return spark.read.parquet(path).mapInArrow(dec, dec.schema)


def spark_noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def spark_overhead(spark, path: str, args) -> None:
    """What the mapInArrow job costs before and after decoding: the Parquet scan alone, the
    scan plus the hand-over of the `value` batches to the Python worker (returning one count per
    batch), the decode with only a count returned, and the whole job. The difference between the
    first three and the last is all that a faster decoder can remove."""
    df = spark.read.parquet(path)
    dec = ticdc_rs.Decoder("canal-json", layout="typed", table=TABLE, schema=TYPED_SCHEMA)

    def counts(batches):
        for b in batches:
            yield pa.record_batch({"n": pa.array([b.num_rows], pa.int64())})

    def decoded_counts(batches):
        for b in batches:
            yield pa.record_batch({"n": pa.array([dec.decode(b).num_rows], pa.int64())})

    parts = [
        ("parquet scan only", lambda: df),
        ("+ batches to Python, counts back", lambda: df.mapInArrow(counts, "n long")),
        ("+ decode, counts back", lambda: df.mapInArrow(decoded_counts, "n long")),
        ("+ typed rows back (the whole job)", lambda: df.mapInArrow(dec, dec.schema)),
    ]
    print("  spark mapInArrow(ticdc_rs), part by part:", flush=True)
    for name, make in parts:
        job = make()
        times, _ = time_runs(lambda job=job: spark_noop(job), args.spark_reps, args.warmup)
        print(f"    {name:<36} median {statistics.median(times):7.3f} s", flush=True)


# --------------------------------------------------------------------------------------------
# Checks

CHECK_COLUMNS = ["_op", "_commit_ts", *NAMES]


def _mismatches(a: pa.ChunkedArray, b: pa.ChunkedArray) -> int:
    b = b.cast(a.type)
    eq = pc.fill_null(pc.equal(a, b), True)
    both_null_state = pc.equal(pc.is_null(a), pc.is_null(b))
    return len(a) - pc.sum(pc.and_(eq, both_null_state).cast(pa.int64())).as_py()


def compare(ref: pa.Table, got: pa.Table) -> dict:
    """Column name -> number of differing rows (or an error text); empty when all agree."""
    if got.num_rows != ref.num_rows:
        return {"rows": f"{got.num_rows} != {ref.num_rows}"}
    bad = {}
    ref_before = ref["_before"].combine_chunks()
    got_before = got["_before"].combine_chunks()
    pairs = [(c, ref[c], got[c]) for c in CHECK_COLUMNS]
    valid = [pa.chunked_array([b.is_valid()]) for b in (ref_before, got_before)]
    pairs.append(("_before (valid)", *valid))
    rf, gf = ref_before.flatten(), got_before.flatten()
    pairs += [(f"_before.{n}", pa.chunked_array([rf[i]]), pa.chunked_array([gf[i]])) for i, n in enumerate(NAMES)]
    for name, a, b in pairs:
        try:
            n = _mismatches(a, b)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            bad[name] = f"cannot compare: {e}"
            continue
        if n:
            bad[name] = n
    return bad


def _micros_text(us: int | None) -> str | None:
    if us is None:
        return None
    return (datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=us)).isoformat(sep=" ") + " UTC"


def spot(table: pa.Table, commit_ts: int) -> dict:
    """One decimal and one timestamp (plus the old decimal) of the row with this commit ts."""
    t = table.filter(pc.equal(table["_commit_ts"], commit_ts)).slice(0, 1)
    if not t.num_rows:
        return {}
    us = t["updated_at"].cast(pa.int64())[0].as_py()
    before = t["_before"].combine_chunks()
    return {
        "amount": t["amount"][0].as_py(),
        "updated_at": _micros_text(us),
        "_before.amount": before.field("amount")[0].as_py() if before.is_valid()[0].as_py() else None,
    }


def checksums_arrow(t: pa.Table) -> dict:
    before = t["_before"].combine_chunks().flatten()
    b_amount = before[NAMES.index("amount")]
    return {
        "rows": t.num_rows,
        "updates": pc.sum(pc.equal(t["_op"], "UPDATE").cast(pa.int64())).as_py(),
        "sum_amount": pc.sum(t["amount"]).as_py(),
        "sum_before_amount": pc.sum(b_amount).as_py(),
        "sum_updated_at_us": pc.sum(t["updated_at"].cast(pa.int64()).cast(pa.decimal128(38, 0))).as_py(),
        "sum_payload_bytes": pc.sum(pc.binary_length(t["payload"])).as_py(),
    }


def checksums_spark(df) -> dict:
    from pyspark.sql import functions as F

    r = df.agg(
        F.count("*").alias("rows"),
        F.sum((F.col("_op") == "UPDATE").cast("long")).alias("updates"),
        F.sum("amount").alias("sum_amount"),
        F.sum("_before.amount").alias("sum_before_amount"),
        F.sum(F.unix_micros("updated_at").cast("decimal(38,0)")).alias("sum_updated_at_us"),
        F.sum(F.length("payload")).alias("sum_payload_bytes"),
    ).collect()[0]
    return r.asDict()


def spot_spark(df, commit_ts: int) -> dict:
    from pyspark.sql import functions as F

    rows = (
        df.where(F.col("_commit_ts") == commit_ts)
        .select("amount", F.unix_micros("updated_at"), "_before.amount")
        .collect()
    )
    if not rows:
        return {}
    r = rows[0]
    return {"amount": r[0], "updated_at": _micros_text(r[1]), "_before.amount": r[2]}


# --------------------------------------------------------------------------------------------
# Memory: one peer per child process


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def memory_child(peer: str, tmp: str, batch_size: int) -> dict:
    """Runs `peer` once on the corpus in `tmp` and measures its rise in resident memory."""
    import gc

    protocol = peer.split(":", 1)[1] if ":" in peer else "canal-json"
    table = pq.read_table(os.path.join(tmp, f"{protocol}.parquet"))
    batches = table.to_batches(max_chunksize=batch_size)
    values = table.column("value")
    schema = TYPED_SCHEMA if protocol == "canal-json" else ticdc_rs.infer_schema(batches[:1], protocol, TABLE)
    con = None
    if peer == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads=2")
        con.execute("SET TimeZone='UTC'")
        sql = duck_sql(os.path.join(tmp, "messages.ndjson"))
    elif peer == "polars":
        polars_run = polars_plan()
    gc.collect()
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak-RSS mark starts again from here
    if peer == "duckdb":
        out = run_duckdb(con, sql)
    elif peer == "polars":
        out = polars_run(values)
    elif peer == "orjson":
        out = run_orjson(values)
    elif peer == "python-loop:open":
        out = run_open_python(batches)
    else:
        out = run_ticdc_protocol(protocol, batches, schema)
    peak = _status_kib("VmHWM") - before
    return {"peer": peer, "peak_mb": peak * 1024 / 1e6, "output_mb": mb(out.nbytes), "rows": out.num_rows}


def memory_report(tmp: str, peers: list[str], batch_size: int, input_mb: dict) -> list[dict]:
    import subprocess

    rows = []
    for peer in peers:
        cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", peer, "--memory-dir", tmp,
               "--batch-size", str(batch_size)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  {peer:<28} failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        protocol = peer.split(":", 1)[1] if ":" in peer else "canal-json"
        r["input_mb"] = input_mb[protocol]
        rows.append(r)
        print(f"  {peer:<28} input {r['input_mb']:7.1f} MB  peak rise {r['peak_mb']:8.1f} MB  "
              f"output {r['output_mb']:7.1f} MB  ({r['peak_mb'] / r['input_mb']:.2f}x input)", flush=True)
    return rows


# --------------------------------------------------------------------------------------------
# Main


def time_runs(fn, reps: int, warmup: int):
    for _ in range(warmup):
        result = fn()
    times, result = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times, result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--messages", type=int, default=200_000, help="number of messages (default 200,000)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per peer (median reported)")
    ap.add_argument("--spark-reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs before timing")
    ap.add_argument("--batch-size", type=int, default=10_000, help="ticdc_rs input batch size")
    ap.add_argument("--from-ndjson", help="read messages (one per line) instead of generating them")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark jobs")
    ap.add_argument("--only", help="comma-separated peers: ticdc_rs,duckdb,polars,orjson,spark")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--no-protocols", action="store_true", help="skip the open/craft/simple corpora")
    ap.add_argument("--spark-overhead", action="store_true",
                    help="also time the parts of the Spark mapInArrow job that are Spark's own")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    ap.add_argument("--memory-child", help=argparse.SUPPRESS)
    ap.add_argument("--memory-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child, args.memory_dir, args.batch_size)))
        return 0
    only = set(args.only.split(",")) if args.only else {"ticdc_rs", "duckdb", "polars", "orjson", "spark"}
    if args.no_spark:
        only.discard("spark")

    t0 = time.perf_counter()
    if args.from_ndjson:
        with open(args.from_ndjson, "rb") as f:
            messages = [line for line in f.read().split(b"\n") if line]
    else:
        messages = generate(args.messages, args.seed)
    nbytes = sum(map(len, messages))
    n = len(messages)
    print(f"{n} messages, {mb(nbytes):.1f} MB, {nbytes / n:.0f} bytes/message "
          f"(made in {time.perf_counter() - t0:.1f} s)", flush=True)

    values = pa.chunked_array([pa.array(messages, pa.binary())])
    del messages
    table = pa.table({"value": values})
    batches = table.to_batches(max_chunksize=args.batch_size)
    tmp = tempfile.mkdtemp(prefix="ticdc_peers_")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    ndjson_path = os.path.join(tmp, "messages.ndjson")
    with open(ndjson_path, "wb") as f:
        for chunk in values.chunks:
            for v in chunk:
                f.write(v.as_buffer())
                f.write(b"\n")
    parquet_path = os.path.join(tmp, "canal-json.parquet")
    pq.write_table(table, parquet_path, row_group_size=10_000)

    results, checks = [], {}

    def record(name, threads, times, note=""):
        med = statistics.median(times)
        results.append({"peer": name, "threads": threads, "times_s": times, "median_s": med,
                        "mb_per_s": mb(nbytes) / med, "note": note})
        print(f"  {name:<28} median {med:8.3f} s  {mb(nbytes) / med:8.1f} MB/s", flush=True)

    # (a) ticdc_rs: the reference output.
    times, ref = time_runs(lambda: run_ticdc(batches), args.reps, args.warmup)
    record("ticdc_rs typed", 1, times, f"batches of {args.batch_size}")
    assert ref.num_rows == n, (ref.num_rows, n)
    # Spot row: an UPDATE near the middle.
    ops = ref["_op"].to_pylist()
    k = next(i for i in range(n // 2, n) if ops[i] == "UPDATE") if "UPDATE" in ops[n // 2:] else n // 2
    spot_ts = ref["_commit_ts"][k].as_py()
    ref_spot = spot(ref, spot_ts)
    ref_sums = checksums_arrow(ref)
    checks["ticdc_rs"] = {"spot": ref_spot, "checksums": ref_sums}
    print(f"  spot row {k} (_commit_ts {spot_ts}): {ref_spot}", flush=True)

    def check(name, got):
        bad = compare(ref, got)
        s = spot(got, spot_ts)
        ok = not bad and s == ref_spot
        checks[name] = {"rows": got.num_rows, "mismatches": bad, "spot": s, "ok": ok}
        print(f"  {'':<28} rows {got.num_rows}, spot {'agrees' if s == ref_spot else f'DIFFERS {s}'}, "
              f"{'all columns agree' if not bad else f'MISMATCHES {bad}'}", flush=True)

    if "ticdc_rs" in only and os.cpu_count() and os.cpu_count() > 1:
        times, got = time_runs(lambda: run_ticdc_threads(batches, 2), args.reps, args.warmup)
        record("ticdc_rs typed, 2 threads", 2, times, "one Decoder per Python thread")
        check("ticdc_rs 2 threads", got)

    if "duckdb" in only:
        import duckdb

        # Pure SQL (varbinary decoded in SQL, character by character), and the same query with
        # that one expression replaced by a vectorised Arrow pass over the result.
        for payload_in_sql, label in ((True, "duckdb read_ndjson"), (False, "duckdb + Arrow payload fix")):
            sql = duck_sql(ndjson_path, payload_in_sql)
            for threads in (2, 1):
                con = duckdb.connect()
                con.execute(f"SET threads={threads}")
                con.execute("SET TimeZone='UTC'")
                run = functools.partial(run_duckdb, con, sql, payload_in_sql)
                times, got = time_runs(run, args.reps, args.warmup)
                record(label, threads, times, "from an NDJSON file")
                check(f"{label} threads={threads}", got)
                con.close()

    if "polars" in only:
        import polars as pl

        run = polars_plan()
        times, got = time_runs(lambda: run(values), args.reps, args.warmup)
        record("polars str.json_decode", pl.thread_pool_size(), times, "payload via a vectorised Arrow UDF")
        check("polars", got)

    if "orjson" in only:
        times, got = time_runs(lambda: run_orjson(values), args.reps, args.warmup)
        record("orjson loop + pyarrow", 1, times)
        check("orjson", got)

    if "spark" in only:
        t_start = time.perf_counter()
        spark = spark_session()
        print(f"  (spark {spark.version} session up in {time.perf_counter() - t_start:.1f} s)", flush=True)
        jobs = [("spark from_json", spark_from_json), ("spark mapInArrow(ticdc_rs)", spark_ticdc)]
        for name, make in jobs:
            df = make(spark, parquet_path)
            times, _ = time_runs(lambda df=df: spark_noop(df), args.spark_reps, args.warmup)
            record(name, 2, times, "local[2], Parquet input, noop sink")
            sums = checksums_spark(df)
            s = spot_spark(df, spot_ts)
            sums_ok = all(sums[key] == ref_sums[key] for key in ref_sums)
            spot_ok = s == ref_spot
            checks[name] = {"checksums": sums, "spot": s, "ok": sums_ok and spot_ok}
            print(f"  {'':<28} rows {sums['rows']}, spot {'agrees' if spot_ok else f'DIFFERS {s}'}, "
                  f"checksums {'agree' if sums_ok else f'DIFFER {sums} vs {ref_sums}'}", flush=True)
        if args.spark_overhead:
            spark_overhead(spark, parquet_path, args)
        spark.stop()

    protocol_results = []
    corpus_mb = {"canal-json": mb(nbytes)}
    if not args.no_protocols:
        print("other protocols (the same events, re-encoded by ticdc_rs):", flush=True)
        for protocol, corpus in protocol_corpora(batches).items():
            size = sum(b.column("value").nbytes + b.column("key").nbytes for b in corpus)
            corpus_mb[protocol] = mb(size)
            pq.write_table(pa.Table.from_batches(corpus), os.path.join(tmp, f"{protocol}.parquet"))
            schema = ticdc_rs.infer_schema(corpus[:1], protocol, TABLE)
            run = functools.partial(run_ticdc_protocol, protocol, corpus, schema)
            times, got = time_runs(run, args.reps, args.warmup)
            med = statistics.median(times)
            protocol_results.append({"protocol": protocol, "decoder": "ticdc_rs typed", "bytes": size,
                                     "median_s": med, "mb_per_s": mb(size) / med, "rows": got.num_rows})
            print(f"  {protocol:<12} ticdc_rs typed      {mb(size):8.1f} MB  median {med:7.3f} s  "
                  f"{mb(size) / med:8.1f} MB/s  rows {got.num_rows}", flush=True)
            if protocol == "open":
                times, py = time_runs(functools.partial(run_open_python, corpus), max(1, args.reps // 2), 0)
                pmed = statistics.median(times)
                protocol_results.append({"protocol": protocol, "decoder": "python loop", "bytes": size,
                                         "median_s": pmed, "mb_per_s": mb(size) / pmed, "rows": py.num_rows})
                print(f"  {protocol:<12} python loop         {mb(size):8.1f} MB  median {pmed:7.3f} s  "
                      f"{mb(size) / pmed:8.1f} MB/s  rows {py.num_rows} ({pmed / med:.1f}x ticdc_rs time)",
                      flush=True)

    memory_results = []
    if not args.no_memory and os.path.exists("/proc/self/clear_refs"):
        print("peak memory (one run per child process; rise in resident memory above the loaded corpus):", flush=True)
        peers = [p for p in ("ticdc_rs", "duckdb", "polars", "orjson") if p in only]
        peers += [f"ticdc_rs:{p}" for p in corpus_mb if p != "canal-json"]
        peers += ["python-loop:open"] if "open" in corpus_mb else []
        memory_results = memory_report(tmp, peers, args.batch_size, corpus_mb)

    # Table
    base = results[0]["median_s"]
    spark_base = next((r["median_s"] for r in results if r["peer"] == "spark mapInArrow(ticdc_rs)"), None)
    print()
    print(f"N = {n} messages, {mb(nbytes):.1f} MB of message bytes; median of {args.reps} runs "
          f"({args.spark_reps} for Spark) after {args.warmup} warm-up; {os.cpu_count()} cores")
    header = f"{'peer':<30} {'thr':>3} {'median s':>9} {'MB/s':>8} {'x ticdc_rs time':>16}"
    print(header)
    print("-" * len(header))
    for r in results:
        r["ratio_vs_ticdc_rs"] = r["median_s"] / base
        extra = ""
        if spark_base and r["peer"] == "spark from_json":
            r["ratio_vs_spark_ticdc_rs"] = r["median_s"] / spark_base
            extra = f"   ({r['ratio_vs_spark_ticdc_rs']:.2f}x spark+ticdc_rs)"
        print(f"{r['peer']:<30} {r['threads']:>3} {r['median_s']:>9.3f} {r['mb_per_s']:>8.1f} "
              f"{r['ratio_vs_ticdc_rs']:>15.2f}x{extra}")
    if memory_results:
        ref_peak = next((r["peak_mb"] for r in memory_results if r["peer"] == "ticdc_rs"), None)
        print()
        header = f"{'peak memory':<30} {'input MB':>9} {'peak MB':>8} {'output MB':>10} {'x ticdc_rs':>11}"
        print(header)
        print("-" * len(header))
        for r in memory_results:
            vs = f"{r['peak_mb'] / ref_peak:10.2f}x" if ref_peak and ":" not in r["peer"] else ""
            print(f"{r['peer']:<30} {r['input_mb']:>9.1f} {r['peak_mb']:>8.1f} {r['output_mb']:>10.1f} {vs:>11}")
    failed = [k for k, v in checks.items() if k != "ticdc_rs" and not v.get("ok")]
    print()
    print("checks: " + ("all peers agree with ticdc_rs" if not failed else f"DISAGREE: {', '.join(failed)}"))

    if args.json:
        import importlib.metadata as md

        versions = {}
        for p in ("ticdc_rs", "pyarrow", "duckdb", "polars", "orjson", "pyspark"):
            try:
                versions[p] = md.version(p)
            except md.PackageNotFoundError:
                pass
        with open(args.json, "w") as f:
            json.dump({
                "messages": n, "bytes": nbytes, "seed": args.seed, "reps": args.reps,
                "spark_reps": args.spark_reps, "cpu_count": os.cpu_count(), "python": platform.python_version(),
                "versions": versions, "results": results, "checks": checks,
                "protocols": protocol_results, "memory": memory_results,
            }, f, indent=1, default=str)
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
