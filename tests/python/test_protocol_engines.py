"""Every protocol on real engines: Spark `mapInArrow` over Parquet dumps holding Kafka key and
value, and Polars. The dumps are made by our own encoders from one Canal-JSON stream, so every
protocol must give back the same changes."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_engines import TSO, canal_message, watermark

import ticdc_rs
import ticdc_rs.polars

ROWS = 40


def canal_stream() -> pa.RecordBatch:
    values = []
    for i in range(ROWS):
        values.append(canal_message("INSERT", i, f"{i}.25", f"note {i} ✓", TSO + 10 * i))
        if i % 4 == 1:
            values.append(canal_message("UPDATE", i, f"{i}.50", f"new {i}", TSO + 10 * i + 1,
                                        old={"amount": f"{i}.25", "note": f"note {i} ✓"}))
        if i % 8 == 3:
            values.append(canal_message("DELETE", i, f"{i}.25", f"note {i} ✓", TSO + 10 * i + 2))
    values.append(watermark(TSO + 10 * ROWS))
    return pa.record_batch({"value": pa.array(values, pa.binary())})


@pytest.fixture(scope="module")
def events() -> pa.RecordBatch:
    return ticdc_rs.Decoder("canal-json").decode(canal_stream())


def dump_of(protocol: str, events: pa.RecordBatch, path, **options) -> str:
    encoded = ticdc_rs.Encoder(protocol, **options).encode(events)
    table = pa.table({
        "key": encoded.column("key"),
        "value": encoded.column("value"),
        "partition": pa.array([0] * encoded.num_rows, pa.int32()),
        "offset": pa.array(range(encoded.num_rows), pa.int64()),
    })
    file = path / f"{protocol}.parquet"
    pq.write_table(table, file)
    return str(file)


def changes(rows) -> list[tuple]:
    return sorted((r["_op"], r["_commit_ts"], tuple(sorted(r["_after"] or [])), tuple(sorted(r["_before"] or [])))
                  for r in rows if r["_op"] in ("INSERT", "UPDATE", "DELETE"))


@pytest.mark.parametrize("protocol", ["open", "craft", "simple-json", "simple-avro"])
def test_spark_map_in_arrow_over_a_kafka_dump(spark, events, tmp_path, protocol):
    path = dump_of(protocol, events, tmp_path)
    df = spark.read.parquet(path)
    dec = ticdc_rs.Decoder(protocol, carry=["partition", "offset"])
    out = df.mapInArrow(dec, dec.schema).collect()
    rows = [r.asDict(recursive=True) for r in out]
    for r in rows:
        r["_after"] = None if r["_after"] is None else list(r["_after"].items())
        r["_before"] = None if r["_before"] is None else list(r["_before"].items())
    assert changes(rows) == changes(events.to_pylist())
    assert all(r["_partition"] == 0 for r in rows)

    sample = pq.read_table(path)
    schema = ticdc_rs.infer_schema(sample, protocol, "shop.orders")
    typed = ticdc_rs.Decoder(protocol, layout="typed", table="shop.orders", schema=schema)
    typed_rows = df.mapInArrow(typed, typed.schema).filter("_op = 'INSERT'").count()
    assert typed_rows == ROWS


def test_spark_simple_rows_before_their_bootstrap_in_other_batches(spark, events, tmp_path):
    """A consumer joining mid-stream: every DML comes before the BOOTSTRAP, one message per Arrow
    batch, in one partition. The Decoder holds the rows across batches and emits them once the
    schema arrives."""
    encoded = ticdc_rs.Encoder("simple-json").encode(events)
    values = encoded.column("value").to_pylist()
    bootstrap = [v for v in values if b'"type":"BOOTSTRAP"' in v]
    rest = [v for v in values if b'"type":"BOOTSTRAP"' not in v]
    assert len(bootstrap) == 1
    path = tmp_path / "late_bootstrap.parquet"
    stream = rest + bootstrap
    table = pa.table({"value": pa.array(stream, pa.binary()), "offset": pa.array(range(len(stream)), pa.int64())})
    pq.write_table(table, path)

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "1")
    try:
        df = spark.read.parquet(str(path)).coalesce(1)
        dec = ticdc_rs.Decoder("simple-json", on_error="collect", carry=["offset"])
        rows = [r.asDict() for r in df.mapInArrow(dec, dec.schema).collect()]
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    ops = [r["_op"] for r in rows]
    assert "ERROR" not in ops
    assert ops.count("INSERT") == ROWS
    assert ops.index("BOOTSTRAP") < ops.index("INSERT"), "held rows come out after their schema"
    # Each released row carries its own message's Kafka offset, not the BOOTSTRAP's.
    for r in rows:
        if r["_op"] in ("INSERT", "UPDATE", "DELETE"):
            source = json.loads(stream[r["_offset"]])
            assert (source["type"], source["commitTs"]) == (r["_op"], r["_commit_ts"])


@pytest.mark.parametrize("protocol", ["simple-json", "simple-avro"])
def test_simple_rows_held_across_batches_keep_their_own_carried_columns(events, protocol):
    encoded = ticdc_rs.Encoder(protocol).encode(events)
    values = encoded.column("value").to_pylist()
    is_bootstrap = [ticdc_rs.Decoder(protocol).decode(pa.record_batch({"value": pa.array([v], pa.binary())}))
                    .column("_op").to_pylist() == ["BOOTSTRAP"] for v in values]
    rest = [v for v, b in zip(values, is_bootstrap, strict=True) if not b]
    bootstrap = [v for v, b in zip(values, is_bootstrap, strict=True) if b]
    dec = ticdc_rs.Decoder(protocol, carry=["offset"])

    def batch(vals, first_offset):
        return pa.record_batch({"value": pa.array(vals, pa.binary()),
                                "offset": pa.array(range(first_offset, first_offset + len(vals)), pa.int64())})

    held = dec.decode(batch(rest[:6], 100))
    assert held.num_rows == 0
    same_batch = dec.decode(batch(rest[6:9] + bootstrap, 200))
    rows = same_batch.to_pylist()
    dml = [r for r in rows if r["_op"] in ("INSERT", "UPDATE", "DELETE")]
    assert [r["_offset"] for r in dml] == [100, 101, 102, 103, 104, 105, 200, 201, 202]
    assert [r["_message"] for r in dml] == [0, 1, 2, 3, 4, 5, 0, 1, 2]
    assert [r["_offset"] for r in rows if r["_op"] == "BOOTSTRAP"] == [203]

    # Rows whose schema never comes: at flush, ERROR rows that still say where they came from.
    dec = ticdc_rs.Decoder(protocol, carry=["offset"], on_error="collect")
    assert dec.decode(batch(rest[:3], 500)).num_rows == 0
    expired = dec.flush().to_pylist()
    assert [(r["_op"], r["_offset"], r["_message"]) for r in expired] == [("ERROR", 500 + i, i) for i in range(3)]


def test_spark_rows_whose_schema_never_comes_are_error_rows(spark, events, tmp_path):
    encoded = ticdc_rs.Encoder("simple-json").encode(events)
    rows_only = [v for v in encoded.column("value").to_pylist() if b'"type":"BOOTSTRAP"' not in v]
    path = tmp_path / "no_bootstrap.parquet"
    pq.write_table(pa.table({"value": pa.array(rows_only, pa.binary())}), path)
    dec = ticdc_rs.Decoder("simple-json", on_error="collect")
    rows = [r.asDict() for r in spark.read.parquet(str(path)).coalesce(1).mapInArrow(dec, dec.schema).collect()]
    dml = [v for v in rows_only if b'"type":"WATERMARK"' not in v]
    errors = [r for r in rows if r["_op"] == "ERROR"]
    assert len(errors) == len(dml), "nothing is lost: every held row is reported"
    assert all(r["_raw_value"] for r in errors)


def test_spark_encoder_map_in_arrow(spark, events, tmp_path):
    path = tmp_path / "events.parquet"
    pq.write_table(pa.Table.from_batches([events]), path)
    enc = ticdc_rs.Encoder("canal-json", enable_tidb_extension=True)
    out = spark.read.parquet(str(path)).coalesce(1).mapInArrow(enc, enc.schema).toArrow()
    again = ticdc_rs.Decoder("canal-json").decode(out.to_batches()[0])
    assert changes(again.to_pylist()) == changes(events.to_pylist())


@pytest.mark.parametrize("protocol", ["open", "craft", "simple-avro"])
def test_polars_decode_and_replay(events, tmp_path, protocol):
    path = dump_of(protocol, events, tmp_path)
    df = ticdc_rs.polars.decode(path, protocol, layout="typed", table="shop.orders")
    assert df.filter(df["_op"] == "INSERT").height == ROWS
    current = ticdc_rs.polars.replay(df, keys=["id"])
    deleted = {i for i in range(ROWS) if i % 8 == 3}
    assert sorted(current["id"].to_list()) == [i for i in range(ROWS) if i not in deleted]


ORDERS_DDL = """CREATE TABLE `shop`.`orders` (
  `id` int NOT NULL,
  `amount` decimal(10,2) DEFAULT NULL,
  `note` varchar(64) DEFAULT NULL,
  `raw` varbinary(16) DEFAULT NULL,
  `at` timestamp NULL DEFAULT NULL,
  PRIMARY KEY (`id`) /*T![clustered_index] CLUSTERED */
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""

TYPED_COLUMNS = ["_op", "_commit_ts", "id", "amount", "note", "raw", "at", "_before"]


@pytest.mark.parametrize("protocol", ["canal-json", "open", "craft", "simple-json", "simple-avro"])
@pytest.mark.parametrize("layout", ["envelope", "typed"])
def test_decode_encode_decode_round_trip(protocol, layout):
    """Canal-JSON in, any protocol out and back, in either layout: the same typed changes."""
    typed = dict(layout="typed", table="shop.orders", schema=ORDERS_DDL)
    reference = ticdc_rs.Decoder("canal-json", **typed).decode(canal_stream())
    source = reference if layout == "typed" else ticdc_rs.Decoder("canal-json").decode(canal_stream())
    extension = {"enable_tidb_extension": True} if protocol == "canal-json" else {}
    encoded = ticdc_rs.Encoder(protocol, **extension).encode(source)
    again = ticdc_rs.Decoder(protocol, **typed).decode(encoded)
    def rows(b):
        return [{k: r[k] for k in TYPED_COLUMNS} for r in b.to_pylist() if r["_op"] != "BOOTSTRAP"]
    assert rows(again) == rows(reference)


@pytest.mark.parametrize("protocol", ["canal-json", "open", "craft", "simple-json", "simple-avro"])
def test_protocol_is_detected_per_message(events, protocol):
    """`ticdc_rs.decode` (the mapInArrow default) needs no protocol name."""
    extension = {"enable_tidb_extension": True} if protocol == "canal-json" else {}
    encoded = ticdc_rs.Encoder(protocol, **extension).encode(events)
    rows = [b for b in ticdc_rs.decode(iter([encoded]))]
    assert changes(pa.Table.from_batches(rows).to_pylist()) == changes(events.to_pylist())


def test_mixed_protocols_in_one_batch(events):
    parts = [ticdc_rs.Encoder(p).encode(events) for p in ("open", "craft", "simple-avro")]
    mixed = pa.Table.from_batches(parts).combine_chunks().to_batches()[0]
    out = pa.Table.from_batches(list(ticdc_rs.decode(iter([mixed]))))
    assert changes(out.to_pylist()) == sorted(changes(events.to_pylist()) * 3)


def long_value_stream() -> pa.RecordBatch:
    """Rows whose text and binary values are too long to be inlined in an Arrow view."""
    values = []
    for i in range(ROWS):
        message = json.loads(canal_message("INSERT", i, f"{i}.25", f"a note long enough for a view, row {i} ✓",
                                           TSO + 10 * i))
        message["data"][0]["raw"] = "\u0001\u00ff" * 8
        values.append(json.dumps(message, ensure_ascii=False).encode())
    return pa.record_batch({"value": pa.array(values, pa.binary())})


@pytest.mark.parametrize("protocol", ["canal-json", "open", "craft", "simple-json", "simple-avro"])
def test_typed_views_point_into_the_input(protocol):
    """Declared utf8_view/binary_view columns hold the same values as utf8/binary, and values that
    are verbatim bytes of their message share the input buffer instead of being copied."""
    typed = dict(layout="typed", table="shop.orders")
    source = ticdc_rs.Decoder("canal-json", schema=ORDERS_DDL, **typed).decode(long_value_stream())
    extension = {"enable_tidb_extension": True} if protocol == "canal-json" else {}
    encoded = ticdc_rs.Encoder(protocol, **extension).encode(source)
    plain = ticdc_rs.Decoder(protocol, schema=ORDERS_DDL, **typed).decode(encoded)
    views = ticdc_rs.polars._with_views(ticdc_rs.schema_from_ddl(ORDERS_DDL))
    viewed = ticdc_rs.Decoder(protocol, schema=views, **typed).decode(encoded)
    assert viewed.schema.field("note").type == pa.string_view()
    assert viewed.schema.field("raw").type == pa.binary_view()
    assert viewed.schema.field("_before").type.field("note").type == pa.string_view()
    assert viewed.to_pylist() == plain.to_pylist()
    assert sum(1 for n in viewed.column("note").to_pylist() if n and len(n.encode()) > 12) >= ROWS

    input_data = encoded.column("value").buffers()[2].address
    note_blocks = [b.address for b in viewed.column("note").buffers()[2:] if b is not None]
    assert input_data in note_blocks, "long text values point into the input buffer"
    if protocol in ("craft", "simple-avro"):
        raw_blocks = [b.address for b in viewed.column("raw").buffers()[2:] if b is not None]
        assert raw_blocks == [input_data], "binary values are verbatim in binary protocols"


def test_polars_typed_frames_use_views(events, tmp_path):
    path = dump_of("craft", events, tmp_path)
    df = ticdc_rs.polars.decode(path, "craft", layout="typed", table="shop.orders")
    plain = ticdc_rs.polars.decode(path, "craft", layout="typed", table="shop.orders", views=False)
    assert df.equals(plain)
    assert df.schema["note"] == plain.schema["note"]


def temporal_stream() -> pa.RecordBatch:
    def message(kind, row_id, d, dt, t, y, ts):
        data = {"id": str(row_id), "d": d, "dt": dt, "ts": dt, "t": t, "y": y}
        return json.dumps({
            "id": 0, "database": "shop", "table": "times", "pkNames": ["id"], "isDdl": False, "type": kind,
            "es": ts >> 18, "ts": 0, "sql": "",
            "sqlType": {"id": 4, "d": 91, "dt": 93, "ts": 93, "t": 92, "y": 12},
            "mysqlType": {"id": "int", "d": "date", "dt": "datetime(6)", "ts": "timestamp(3)", "t": "time(3)",
                          "y": "year"},
            "old": None, "data": [data], "_tidb": {"commitTs": ts},
        }).encode()
    values = [
        message("INSERT", 1, "2024-02-29", "2024-02-29 23:59:59.123000", "-838:59:59.000", "2024", TSO + 1),
        message("INSERT", 2, "1970-01-01", "1999-12-31 00:00:00.000000", "12:34:56.789", "1901", TSO + 2),
        message("DELETE", 1, "2024-02-29", "2024-02-29 23:59:59.123000", "-838:59:59.000", "2024", TSO + 3),
    ]
    return pa.record_batch({"value": pa.array(values, pa.binary())})


@pytest.mark.parametrize("protocol", ["canal-json", "open", "craft", "simple-json", "simple-avro"])
def test_temporal_columns_survive_every_encoder(protocol):
    """DATE, DATETIME, TIMESTAMP, TIME (a duration) and YEAR from the typed layout, encoded and back."""
    stream = temporal_stream()
    schema = ticdc_rs.infer_schema([stream], "canal-json", "shop.times")
    assert pa.types.is_duration(schema.field("t").type)
    typed = dict(layout="typed", table="shop.times", schema=schema)
    reference = ticdc_rs.Decoder("canal-json", **typed).decode(stream)
    extension = {"enable_tidb_extension": True} if protocol == "canal-json" else {}
    encoded = ticdc_rs.Encoder(protocol, **extension).encode(reference)
    again = ticdc_rs.Decoder(protocol, **typed).decode(encoded)
    columns = ["_op", "id", "d", "dt", "ts", "t", "y"]
    def rows(b):
        return [{k: r[k] for k in columns} for r in b.to_pylist() if r["_op"] != "BOOTSTRAP"]
    assert rows(again) == rows(reference)
    assert len(rows(reference)) == 3


def test_handle_key_only_rows_keep_their_key_through_inference_and_re_encoding():
    message = json.dumps({
        "id": 0, "database": "shop", "table": "orders", "pkNames": ["id"], "isDdl": False, "type": "INSERT",
        "es": 1, "ts": 0, "sql": "", "sqlType": {"id": 4}, "mysqlType": {"id": "int"}, "old": None,
        "data": [{"id": "5"}], "_tidb": {"commitTs": TSO, "onlyHandleKey": True},
    }).encode()
    stream = pa.record_batch({"value": pa.array([message], pa.binary())})
    schema = ticdc_rs.infer_schema([stream], "canal-json", "shop.orders")
    assert json.loads(schema.metadata[b"primary_key"]) == ["id"]
    typed = dict(layout="typed", table="shop.orders", schema=schema)
    decoded = ticdc_rs.Decoder("canal-json", **typed).decode(stream)
    for declared in (schema, schema.remove_metadata()):
        source = decoded.replace_schema_metadata(declared.metadata)
        encoded = ticdc_rs.Encoder("canal-json", enable_tidb_extension=True).encode(source)
        again = ticdc_rs.Decoder("canal-json", **typed).decode(encoded).to_pylist()
        assert [(r["_op"], r["id"], r["_handle_key_only"]) for r in again] == [("INSERT", 5, True)]


@pytest.mark.parametrize("protocol", ["open", "craft"])
def test_typed_output_carries_the_declared_key_into_the_encoders(protocol):
    """A typed decoder's output keeps the declared schema's `primary_key` metadata, so re-encoded
    rows carry their key flags without the caller putting them back."""
    declared = ticdc_rs.schema_from_ddl(ORDERS_DDL)
    typed = dict(layout="typed", table="shop.orders", schema=declared)
    decoded = ticdc_rs.Decoder("canal-json", **typed).decode(canal_stream())
    assert decoded.schema.metadata[b"primary_key"] == declared.metadata[b"primary_key"]
    again = ticdc_rs.Decoder(protocol).decode(ticdc_rs.Encoder(protocol).encode(decoded)).to_pylist()
    rows = [r for r in again if r["_op"] in ("INSERT", "UPDATE", "DELETE")]
    assert rows and all(r["_keys"] == ["id"] for r in rows)
    unkeyed = decoded.replace_schema_metadata(None)
    again = ticdc_rs.Decoder(protocol).decode(ticdc_rs.Encoder(protocol).encode(unkeyed)).to_pylist()
    assert all(not r["_keys"] for r in again if r["_op"] in ("INSERT", "UPDATE", "DELETE"))


@pytest.mark.parametrize("protocol", ["open", "craft"])
def test_ddl_categories_become_tidb_action_codes(protocol):
    """Canal-JSON and Simple carry a DDL's category, Open and Craft TiDB's action code: encoding
    reads the code from the query, as TiCDC's own decoders do, and a code carries through."""
    def ddl(sql: str, kind: str) -> bytes:
        return json.dumps({"id": 0, "database": "shop", "table": "orders", "pkNames": None, "isDdl": True,
                           "type": kind, "es": 1, "ts": 0, "sql": sql, "sqlType": None, "mysqlType": None,
                           "data": None, "old": None, "_tidb": {"commitTs": TSO}}).encode()
    statements = [("CREATE TABLE orders (id int primary key)", "CREATE", "3"),
                  ("ALTER TABLE orders ADD COLUMN note text", "ALTER", "5"),
                  ("ALTER TABLE orders ADD INDEX i (note)", "CINDEX", "7"),
                  ("TRUNCATE TABLE orders", "TRUNCATE", "11"),
                  ("CREATE DATABASE shop", "QUERY", "1")]
    stream = pa.record_batch({"value": pa.array([ddl(sql, kind) for sql, kind, _ in statements], pa.binary())})
    events = ticdc_rs.Decoder("canal-json").decode(stream)
    assert events.column("_ddl_type").to_pylist() == [kind for _, kind, _ in statements]
    again = ticdc_rs.Decoder(protocol).decode(ticdc_rs.Encoder(protocol).encode(events))
    assert again.column("_ddl_type").to_pylist() == [code for _, _, code in statements]
    assert again.column("_ddl").to_pylist() == [sql for sql, _, _ in statements]
    back = ticdc_rs.Decoder("canal-json").decode(ticdc_rs.Encoder("canal-json").encode(again))
    assert back.column("_ddl_type").to_pylist() == [kind for _, kind, _ in statements]


def test_encode_failures_name_the_row(events):
    """An event the protocol cannot hold raises EncodeError with its row in the input batch; a
    batch the encoder cannot read at all is a usage error, not an EncodeError."""
    first_row = events.column("_op").to_pylist().index("INSERT")
    with pytest.raises(ticdc_rs.EncodeError) as info:
        ticdc_rs.Encoder("open", max_message_bytes=64).encode(events)
    assert (info.value.protocol, info.value.row) == ("open", first_row)
    assert "exceeds" in info.value.reason and isinstance(info.value, ValueError)
    assert not isinstance(info.value, ticdc_rs.DecodeError)
    with pytest.raises(ticdc_rs.UsageError, match="_op") as usage:
        ticdc_rs.Encoder("craft").encode(events.drop_columns(["_op"]))
    assert not isinstance(usage.value, ticdc_rs.EncodeError)
