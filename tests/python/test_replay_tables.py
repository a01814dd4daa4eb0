"""A topic of several tables replayed in one call, in Polars and Spark."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from changefeed import Topic, Workload, rows_of, typed_batch
from pyspark.sql.pandas.types import from_arrow_schema

import ticdc_rs
import ticdc_rs.polars as tp
import ticdc_rs.spark as ts


def two_table_topic(together: bool = True) -> tuple[pa.Table, dict]:
    """`shop.items` and `shop.other` changing side by side, each partition in commit-ts order
    (`together`: Open messages mixing both tables' rows), or else each message of one table."""
    rng = random.Random(5)
    items, other = Workload.random(rng, 20), Workload.random(rng, 20)
    a, b = Topic.of(items, rng), Topic.of(other, rng)
    for event in (e for events in b.partitions for e in events):
        if "_table" in event:
            event["_table"] = "other"
        if event.get("_ddl"):
            event["_ddl"] = event["_ddl"].replace("`items`", "`other`")
    tables = []
    for p, (x, y) in enumerate(zip(a.partitions, b.partitions, strict=True)):
        runs = [sorted(x + y, key=lambda e: e["_commit_ts"])] if together else [x, y]
        batches = [ticdc_rs.Encoder("open").encode(typed_batch(run, ddl_schema=None)) for run in runs]
        encoded = pa.Table.from_batches(batches)
        n = encoded.num_rows
        tables.append(pa.table({"key": encoded.column("key"), "value": encoded.column("value"),
                                "partition": pa.array([p] * n, pa.int32()), "offset": pa.array(range(n), pa.int64())}))
    return pa.concat_tables(tables), {"shop.items": rows_of(items.final), "shop.other": rows_of(other.final)}


@pytest.mark.parametrize("together", [True, False])
def test_polars_replays_every_table_of_a_topic(together):
    messages, expected = two_table_topic(together)
    out = tp.replay_tables(messages, "open")
    assert {name: sorted(t.select("id", "v", "n").iter_rows()) for name, t in out.items()} == expected


def test_spark_replays_every_table_of_a_topic(spark):
    messages, expected = two_table_topic()
    out = ts.replay_tables(spark.createDataFrame(messages).cache(), "open")
    assert {name: sorted(tuple(r) for r in t.select("id", "v", "n").collect()) for name, t in out.items()} == expected


def test_spark_decodes_every_table_in_one_pass_as_decode_does_each(spark):
    messages, _ = two_table_topic()
    df = spark.createDataFrame(messages).cache()
    together = ts.decode_tables(df, "open", ["shop.items", "shop.other"])
    for name, events in together.items():
        alone = ts.decode(df, "open", layout="typed", table=name)
        # (Fields read out of a struct column are nullable: `_op`, `_commit_ts`... become so.)
        assert [(f.name, f.dataType) for f in events.schema] == [(f.name, f.dataType) for f in alone.schema]
        assert events.count() > 0
        assert sorted(map(repr, events.collect())) == sorted(map(repr, alone.collect()))
        assert ts._recorded_keys(events) == ["id"]


def test_spark_decodes_every_table_of_a_stream(spark, tmp_path):
    """A streaming DataFrame cannot be cached or sampled: with `schema=`, each table's events
    stream out as the batch decode gives them."""
    messages, _ = two_table_topic()
    pq.write_table(messages, tmp_path / "in.parquet")
    stream = spark.readStream.schema(from_arrow_schema(messages.schema)).parquet(str(tmp_path))
    schema = "CREATE TABLE items (id INT PRIMARY KEY, v VARCHAR(20), n BIGINT)"
    batch = spark.createDataFrame(messages)
    for name, events in ts.decode_tables(stream, "open", ["shop.items", "shop.other"], schema=schema).items():
        out = str(tmp_path / name)
        query = (events.writeStream.format("parquet").option("path", out).option("checkpointLocation", out + ".cp")
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        alone = ts.decode(batch, "open", layout="typed", table=name, schema=schema)
        # (`_message` counts messages within a batch of the decoder's input, which differ.)
        got = spark.read.parquet(out).drop("_message")
        assert sorted(map(repr, got.collect())) == sorted(map(repr, alone.drop("_message").collect()))
    with pytest.raises(ticdc_rs.UsageError, match="streaming"):
        ts.decode_tables(stream, "open", ["shop.items"])
