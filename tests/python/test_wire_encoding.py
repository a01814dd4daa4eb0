"""Encoding per Kafka partition from Python (`_partition` in, `partition` out, `schema_for`),
and the newer wire forms' columns (`_start_ts`, `_row_key`) through the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

import ticdc_rs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def kafka_batch(messages: list[tuple[bytes | None, bytes]], partitions: list[int]) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "key": pa.array([k for k, _ in messages], pa.binary()),
            "value": pa.array([v for _, v in messages], pa.binary()),
            "partition": pa.array(partitions, pa.int32()),
        }
    )


def open_rows(n: int) -> pa.RecordBatch:
    """`n` INSERT events of one table, each in a message of its own, in the envelope layout."""
    enc = ticdc_rs.Encoder("open", max_batch_size=1)
    events = pa.record_batch(
        {
            "_op": ["INSERT"] * n,
            "_commit_ts": pa.array([449543017000000000 + i for i in range(n)], pa.int64()),
            "_schema": ["shop"] * n,
            "_table": ["orders"] * n,
            "_after": pa.array([[("id", str(i)), ("note", f"row {i}")] for i in range(n)],
                               pa.map_(pa.string(), pa.string())),
            "_before": pa.array([None] * n, pa.map_(pa.string(), pa.string())),
            "_types": pa.array([[("id", "int"), ("note", "varchar")]] * n, pa.map_(pa.string(), pa.string())),
            "_keys": pa.array([["id"]] * n, pa.list_(pa.string())),
        }
    )
    out = enc.encode(events)
    assert out.num_rows == n
    return out


def test_rows_of_interleaved_partitions_are_batched_per_partition():
    n = 9
    rows = open_rows(n)
    messages = list(zip(rows.column("key").to_pylist(), rows.column("value").to_pylist(), strict=True))
    partitions = [i % 3 for i in range(n)]
    dec = ticdc_rs.Decoder("open", carry=("partition",))
    events = dec.decode(kafka_batch(messages, partitions))
    assert events.column("_partition").to_pylist() == partitions

    enc = ticdc_rs.Encoder("open")
    out = enc.encode(events)
    assert out.schema.names == ["key", "value", "partition"]
    assert enc.schema_for(events.schema).arrow == out.schema
    assert enc.schema_for(["_topic", "_partition"]).names == ["key", "value", "topic", "partition"]
    assert out.column("partition").to_pylist() == [0, 1, 2]

    back = dec.decode(out.rename_columns(["key", "value", "partition"]))
    for p in range(3):
        ids = [dict(r["_after"])["id"] for r in back.to_pylist() if r["_partition"] == p]
        assert ids == [str(i) for i in range(n) if i % 3 == p]

    # Without a partition column: key/value, one message for all rows, as before.
    plain = ticdc_rs.Encoder("open").encode(events.drop_columns(["_partition"]))
    assert plain.schema.names == ["key", "value"] and plain.num_rows == 1


def test_new_metadata_columns_are_declared_and_filled():
    assert ticdc_rs.ENVELOPE_SCHEMA.arrow.field("_start_ts").type == pa.int64()
    assert ticdc_rs.ENVELOPE_SCHEMA.arrow.field("_row_key").type == pa.binary()
    assert "`_start_ts` BIGINT," in ticdc_rs.ENVELOPE_SCHEMA and "`_row_key` BINARY," in ticdc_rs.ENVELOPE_SCHEMA

    simple = json.loads((FIXTURES / "simple" / "ticdc_include_start_ts_json.json").read_text())
    values = pa.array([bytes.fromhex(m["value_hex"]) for m in simple["messages"]], pa.binary())
    out = ticdc_rs.Decoder("simple-json").decode(pa.record_batch({"value": values}))
    assert out.column("_start_ts").to_pylist() == [e.get("start_ts") for e in simple["expected"]]
    again = ticdc_rs.Encoder("simple-json", simple_include_start_ts=True).encode(out)
    assert b'"startTs":' in again.column("value")[1].as_py()

    canal = json.loads((FIXTURES / "canal-json" / "ticdc_output_row_key.json").read_text())
    values = pa.array([bytes.fromhex(m["value_hex"]) for m in canal["messages"]], pa.binary())
    out = ticdc_rs.Decoder("canal-json").decode(pa.record_batch({"value": values}))
    assert out.column("_row_key").to_pylist() == [bytes.fromhex(e["row_key"]["hex"]) for e in canal["expected"]]
    again = ticdc_rs.Encoder("canal-json", enable_tidb_extension=True, output_row_key=True).encode(out)
    assert again.column("value").to_pylist() == values.to_pylist()
