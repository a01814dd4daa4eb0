"""Real engines: Spark `mapInArrow` on a local session (both layouts) and Polars."""

from __future__ import annotations

import decimal
import json

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import load_vector, vector_files

import ticdc_rs
import ticdc_rs.polars
import ticdc_rs.spark

TSO = 449543017000000000


def canal_message(kind: str, row_id: int, amount: str, note: str, ts: int, old: dict | None = None) -> bytes:
    data = {"id": str(row_id), "amount": amount, "note": note, "raw": "\u0001\u00ff", "at": "2024-05-05 01:02:03"}
    msg = {
        "id": 0, "database": "shop", "table": "orders", "pkNames": ["id"], "isDdl": False, "type": kind,
        "es": ts >> 18, "ts": 0, "sql": "",
        "sqlType": {"id": 4, "amount": 3, "note": 12, "raw": 2004, "at": 93},
        "mysqlType": {"id": "int", "amount": "decimal", "note": "varchar", "raw": "varbinary", "at": "timestamp"},
        "old": [old] if old else None, "data": [data], "_tidb": {"commitTs": ts},
    }
    return json.dumps(msg).encode()


def watermark(ts: int) -> bytes:
    return json.dumps({"id": 0, "database": "", "table": "", "pkNames": None, "isDdl": False,
                       "type": "TIDB_WATERMARK", "es": 0, "ts": 0, "sql": "", "sqlType": None,
                       "mysqlType": None, "data": None, "old": None, "_tidb": {"watermarkTs": ts}}).encode()


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> str:
    values = [
        canal_message("INSERT", 1, "10.00", "a", TSO + 1),
        canal_message("INSERT", 2, "20.50", "b", TSO + 2),
        canal_message("UPDATE", 1, "11.25", "a2", TSO + 3, old={"amount": "10.00", "note": "a"}),
        canal_message("DELETE", 2, "20.50", "b", TSO + 4),
        watermark(TSO + 5),
        b"not json at all",
    ]
    table = pa.table({
        "key": pa.array([None] * len(values), pa.binary()),
        "value": pa.array(values, pa.binary()),
        "topic": pa.array(["cdc"] * len(values)),
        "partition": pa.array([0] * len(values), pa.int32()),
        "offset": pa.array(range(len(values)), pa.int64()),
    })
    path = tmp_path_factory.mktemp("dump") / "orders.parquet"
    pq.write_table(table, path)
    return str(path)


def test_spark_envelope_map_in_arrow(spark, dump):
    df = spark.read.parquet(dump).where("offset < 5")
    out = df.mapInArrow(ticdc_rs.decode, ticdc_rs.ENVELOPE_SCHEMA).orderBy("_commit_ts").collect()
    assert [r["_op"] for r in out] == ["INSERT", "INSERT", "UPDATE", "DELETE", "WATERMARK"]
    assert out[2]["_after"]["amount"] == "11.25" and out[2]["_before"]["note"] == "a"
    assert out[3]["_before"]["raw"] == "Af8=" and out[3]["_after"] is None
    assert out[4]["_commit_ts"] == TSO + 5


def test_spark_typed_with_carry_and_errors(spark, dump):
    df = spark.read.parquet(dump)
    events = ticdc_rs.spark.decode(df, "canal-json", layout="typed", table="shop.orders", on_error="collect")
    fields = {f.name: f.dataType.simpleString() for f in events.schema.fields}
    assert fields["amount"] == "decimal(38,2)" and fields["at"] == "timestamp" and fields["raw"] == "binary"
    assert fields["_partition"] == "int" and fields["_offset"] == "bigint"
    rows = events.orderBy("_offset").collect()
    assert [r["_op"] for r in rows] == ["INSERT", "INSERT", "UPDATE", "DELETE", "WATERMARK", "ERROR"]
    assert rows[2]["amount"] == decimal.Decimal("11.25") and rows[2]["_before"]["amount"] == decimal.Decimal("10.00")
    assert rows[0]["raw"] == bytearray(b"\x01\xff")
    assert rows[5]["_raw_value"] == bytearray(b"not json at all") and rows[5]["_offset"] == 5
    state = ticdc_rs.spark.replay(events.where("_op != 'ERROR'"), keys=["id"]).collect()
    assert [(r["id"], r["note"]) for r in state] == [(1, "a2")]


def test_spark_golden_vectors_through_map_in_arrow(spark, tmp_path):
    values = []
    for path in vector_files("canal-json"):
        v = load_vector(path)
        if v.get("expected_error") or v["config"].get("compression", "none") != "none":
            continue
        values += [bytes.fromhex(m["value_hex"]) for m in v["messages"]]
    pq.write_table(pa.table({"value": pa.array(values, pa.binary())}), tmp_path / "v.parquet")
    df = spark.read.parquet(str(tmp_path / "v.parquet"))
    got = df.mapInArrow(ticdc_rs.decode, ticdc_rs.ENVELOPE_SCHEMA).count()
    direct = ticdc_rs.Decoder().decode(pa.record_batch({"value": pa.array(values, pa.binary())})).num_rows
    assert got == direct > 0


def test_polars_decode_and_replay(dump):
    events = ticdc_rs.polars.decode(dump, "canal-json", layout="typed", table="shop.orders", on_error="skip")
    assert isinstance(events, pl.DataFrame)
    assert events["amount"].dtype == pl.Decimal(38, 2)
    assert events.filter(pl.col("_op") == "UPDATE")["_before"].struct.field("note").to_list() == ["a"]
    state = ticdc_rs.polars.replay(events, keys=["id"])
    assert state.select("id", "note").rows() == [(1, "a2")]
    envelope = ticdc_rs.polars.decode(dump, on_error="collect")
    assert envelope["_op"].to_list()[-1] == "ERROR" and "_offset" in envelope.columns


def test_polars_scan_is_lazy_and_filters(dump):
    lf = ticdc_rs.polars.scan(dump, "canal-json", on_error="skip")
    got = lf.filter(pl.col("_op") == "INSERT").select("_commit_ts").collect()
    assert got["_commit_ts"].to_list() == [TSO + 1, TSO + 2]
