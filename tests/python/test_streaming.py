"""Consumers that start mid-stream: Spark Structured Streaming queries (every micro-batch's tasks
start fresh decoders) and the Simple protocol's table schemas given up front (`table_schemas=`)."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from test_protocol_engines import ROWS, events  # noqa: F401  (the module-scoped fixture)

import ticdc_rs
import ticdc_rs.spark

SIMPLE = ["simple-json", "simple-avro"]
DML = ("INSERT", "UPDATE", "DELETE")


def split_bootstrap(protocol: str, stream: pa.RecordBatch) -> tuple[list[bytes], list[bytes]]:
    """The encoded stream's BOOTSTRAP messages, and the rest."""
    values = ticdc_rs.Encoder(protocol).encode(stream).column("value").to_pylist()
    ops = [ticdc_rs.Decoder(protocol).decode(batch_of([v])).column("_op").to_pylist() for v in values]
    bootstrap = [v for v, o in zip(values, ops, strict=True) if o == ["BOOTSTRAP"]]
    return bootstrap, [v for v, o in zip(values, ops, strict=True) if o != ["BOOTSTRAP"]]


def batch_of(values: list[bytes]) -> pa.RecordBatch:
    return pa.record_batch({"value": pa.array(values, pa.binary())})


@pytest.mark.parametrize("protocol", SIMPLE)
def test_given_table_schemas_spare_rows_the_wait_for_a_bootstrap(events, protocol):  # noqa: F811
    bootstrap, rest = split_bootstrap(protocol, events)
    known = ticdc_rs.Decoder(protocol).decode(batch_of(bootstrap)).column("_table_schema").to_pylist()
    assert len(known) == 1 and known[0].startswith("{")

    # Without them every row waits, and the stream's end reports each as an error.
    waiting = ticdc_rs.Decoder(protocol, on_error="collect")
    assert waiting.decode(batch_of(rest)).num_rows == 1  # the watermark
    assert {r["_op"] for r in waiting.flush().to_pylist()} == {"ERROR"}

    decoder = ticdc_rs.Decoder(protocol, table_schemas=[None, *known, *known])
    rows = decoder.decode(batch_of(rest)).to_pylist()
    assert [r["_op"] for r in rows if r["_op"] in DML].count("INSERT") == ROWS
    assert decoder.stats["held"] == 0 and decoder.flush().num_rows == 0
    # Spark ships decoders to executors pickled: the schemas travel with them.
    shipped = pickle.loads(pickle.dumps(decoder))
    assert shipped.decode(batch_of(rest[:1])).num_rows == 1

    # The typed layout: the schema from the same text, or inferred from it with no sample.
    schema = ticdc_rs.schema_from_table_schema(known[0])
    assert ticdc_rs.infer_schema([], protocol, "shop.orders", table_schemas=known) == schema
    assert (schema.field("raw").type, schema.field("at").type) == (pa.binary(), pa.timestamp("us", "UTC"))
    typed = ticdc_rs.Decoder(protocol, layout="typed", table="shop.orders", schema=known[0], table_schemas=known)
    out = typed.decode(batch_of(rest))
    assert out.column("_op").to_pylist().count("INSERT") == ROWS
    assert out.schema.field("raw").type == pa.binary()
    assert out.column("raw").to_pylist() == [r["raw"] for r in rows_of_typed_reference(protocol, bootstrap + rest)]


def rows_of_typed_reference(protocol: str, values: list[bytes]) -> list[dict]:
    """The typed rows of a decoder that reads the BOOTSTRAP itself."""
    sample = batch_of(values)
    schema = ticdc_rs.infer_schema(sample, protocol, "shop.orders")
    out = ticdc_rs.Decoder(protocol, layout="typed", table="shop.orders", schema=schema).decode(sample)
    return [r for r in out.to_pylist() if r["_op"] != "BOOTSTRAP"]


def test_bad_table_schemas_are_refused_up_front():
    with pytest.raises(ValueError, match="table schema"):
        ticdc_rs.Decoder("simple-json", table_schemas=['{"schema":"s","table":'])
    with pytest.raises(ValueError, match="no schema or table name"):
        ticdc_rs.Decoder("simple-json", table_schemas=['{"columns":[]}'])
    with pytest.raises(TypeError):
        ticdc_rs.Decoder("simple-json", table_schemas='{"schema":"s","table":"t"}')
    with pytest.raises(ValueError):
        ticdc_rs.schema_from_table_schema("{}")


# ---------------------------------------------------------------------------------------------
# Spark Structured Streaming, over a directory of Kafka dumps (Parquet files of key/value, as
# Kafka would give them), one file per micro-batch.

def write_dumps(directory, parts: list[list[bytes]]) -> pa.Schema:
    os.makedirs(directory, exist_ok=True)
    offset = 0
    for i, values in enumerate(parts):
        table = pa.table({"key": pa.array([None] * len(values), pa.binary()), "value": pa.array(values, pa.binary()),
                          "partition": pa.array([0] * len(values), pa.int32()),
                          "offset": pa.array(range(offset, offset + len(values)), pa.int64())})
        offset += len(values)
        path = os.path.join(directory, f"part-{i:03d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))  # the file source goes by mtime
    return table.schema


def stream_of(spark, directory, schema: pa.Schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.readStream.schema(from_arrow_schema(schema)).option("maxFilesPerTrigger", 1).parquet(str(directory))


def test_spark_streaming_query_decodes_through_map_in_arrow(spark, events, tmp_path):  # noqa: F811
    values = ticdc_rs.Encoder("canal-json").encode(events).column("value").to_pylist()
    schema = write_dumps(tmp_path / "in", [values[: len(values) // 2], values[len(values) // 2:]])
    kafka = stream_of(spark, tmp_path / "in", schema)
    assert kafka.isStreaming
    decoded = ticdc_rs.spark.decode(kafka, carry=["partition", "offset"])
    query = (decoded.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert len(query.recentProgress) >= 2, "one micro-batch per file"
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r["_offset"] for r in rows) == list(range(len(values)))
    assert sum(r["_op"] == "INSERT" for r in rows) == ROWS

    with pytest.raises(ValueError, match="streaming"):
        ticdc_rs.spark.decode(kafka, "canal-json", layout="typed", table="shop.orders")


@pytest.mark.parametrize("given", [True, False])
def test_spark_streaming_simple_rows_read_in_micro_batches_without_a_bootstrap(spark, events, tmp_path, given):  # noqa: F811
    """The first micro-batch brings the BOOTSTRAP; the second has rows only. Each micro-batch's
    decoders start empty, so the second's rows are read only with the schemas collected from
    the first (`ticdc_rs.spark.table_schemas`) given back (`table_schemas=`)."""
    bootstrap, rest = split_bootstrap("simple-json", events)
    half = len(rest) // 2
    schema = write_dumps(tmp_path / "in", [bootstrap + rest[:half], rest[half:]])
    known: list[str] = []
    seen: list[dict] = []

    def each(batch, batch_id):
        options = {"table_schemas": known} if given else {}
        decoded = ticdc_rs.spark.decode(batch, "simple-json", on_error="collect", carry=["offset"], **options).cache()
        if given:
            known[:] = ticdc_rs.spark.table_schemas(decoded, known)
        seen.extend(r.asDict() for r in decoded.select("_op", "_offset").collect())
        decoded.unpersist()

    query = (stream_of(spark, tmp_path / "in", schema).writeStream.foreachBatch(each)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    dml = [r for r in seen if r["_op"] in DML]
    errors = [r for r in seen if r["_op"] == "ERROR"]
    if given:
        assert len(known) == 1
        assert not errors and len(dml) == len(rest) - 1  # all but the watermark
        # The second file's rows (after the first's BOOTSTRAP and half of the rows; the watermark last).
        assert sorted(r["_offset"] for r in dml if r["_offset"] > half) == list(range(half + 1, len(rest)))
    else:
        assert len(errors) == len(rest) - half - 1, "the second micro-batch's rows never see their schema"


def test_spark_streaming_typed_layout_from_table_schemas(spark, events, tmp_path):  # noqa: F811
    bootstrap, rest = split_bootstrap("simple-avro", events)
    known = ticdc_rs.Decoder("simple-avro").decode(batch_of(bootstrap)).column("_table_schema").to_pylist()
    schema = write_dumps(tmp_path / "in", [rest])
    kafka = stream_of(spark, tmp_path / "in", schema)
    orders = ticdc_rs.spark.decode(kafka, "simple-avro", layout="typed", table="shop.orders", table_schemas=known)
    query = (orders.writeStream.format("memory").queryName("typed_orders").trigger(availableNow=True).start())
    query.awaitTermination()
    rows = spark.table("typed_orders")
    assert rows.where("_op = 'INSERT'").count() == ROWS
    assert (dict(rows.dtypes)["raw"], dict(rows.dtypes)["at"]) == ("binary", "timestamp")


@pytest.mark.parametrize("protocol", SIMPLE)
def test_polars_reports_rows_whose_schema_never_came_and_reads_them_with_table_schemas(events, protocol):  # noqa: F811
    import polars as pl

    import ticdc_rs.polars

    bootstrap, rest = split_bootstrap(protocol, events)
    known = ticdc_rs.Decoder(protocol).decode(batch_of(bootstrap)).column("_table_schema").to_pylist()
    dump = pa.table({"value": pa.array(rest, pa.binary())})
    dml = len(rest) - 1  # all but the watermark
    for frame in (ticdc_rs.polars.decode(dump, protocol, on_error="collect"),
                  ticdc_rs.polars.scan(dump, protocol, on_error="collect").collect()):
        assert frame.filter(pl.col("_op") == "ERROR").height == dml, "nothing is dropped unsaid"
    lazy = ticdc_rs.polars.scan(dump, protocol, table_schemas=known)
    for _ in range(2):  # each collect reads the stream afresh
        assert lazy.collect().filter(pl.col("_op").is_in(DML)).height == dml
    typed = ticdc_rs.polars.decode(dump, protocol, layout="typed", table="shop.orders", table_schemas=known)
    assert typed.filter(pl.col("_op") == "INSERT").height == ROWS


@pytest.mark.parametrize("protocol", SIMPLE)
def test_the_simple_encoder_repeats_the_bootstrap_as_ticdc_does(events, protocol):  # noqa: F811
    """TiCDC sends a table's BOOTSTRAP again every `send-bootstrap-in-msg-count` rows (10,000 by
    default) or `send-bootstrap-interval-in-sec` (120), so that late consumers find the schema."""
    rows = sum(op in DML for op in events.column("_op").to_pylist())
    for count, expected in ((10, -(-rows // 10)), (0, 1)):
        encoded = ticdc_rs.Encoder(protocol, send_bootstrap_in_msg_count=count).encode(events)
        decoded = ticdc_rs.Decoder(protocol).decode(encoded)
        ops = decoded.column("_op").to_pylist()
        assert ops.count("BOOTSTRAP") == expected
        assert ops[0] == "BOOTSTRAP" and [o for o in ops if o != "BOOTSTRAP"] == events.column("_op").to_pylist()
    # A consumer that joins after the first BOOTSTRAP reads the rows from the next one on.
    encoded = ticdc_rs.Encoder(protocol, send_bootstrap_in_msg_count=10).encode(events).slice(1)
    late = ticdc_rs.Decoder(protocol, on_error="collect")
    out = pa.Table.from_batches([late.decode(encoded), late.flush()])
    assert out.column("_op").to_pylist().count("ERROR") == 0
    assert sum(op in DML for op in out.column("_op").to_pylist()) == rows


@pytest.mark.parametrize("protocol", SIMPLE)
def test_the_simple_encoder_tells_every_partition_the_schema(events, protocol):  # noqa: F811
    """TiCDC sends a table's BOOTSTRAP to every partition: each partition's consumer reads its
    rows alone."""
    partitions = pa.array([i % 3 for i in range(events.num_rows)], pa.int32())
    placed = events.append_column("_partition", partitions)
    encoded = ticdc_rs.Encoder(protocol, send_bootstrap_in_msg_count=0).encode(placed)
    for p in range(3):
        own = encoded.filter(pc.equal(encoded.column("partition"), p))
        ops = ticdc_rs.Decoder(protocol).decode(own).column("_op").to_pylist()
        assert ops.count("BOOTSTRAP") == 1 and ops[0] == "BOOTSTRAP", ops
        assert ops[1:] == [op for i, op in enumerate(events.column("_op").to_pylist()) if i % 3 == p]
