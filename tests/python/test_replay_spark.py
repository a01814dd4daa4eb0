"""Spark's replay and apply give the model's table, and the same table as Polars."""

from __future__ import annotations

import json
import random

import polars as pl
import pyarrow as pa
import pytest
from changefeed import PROTOCOLS, SCHEMA, TABLE, Topic, Workload, decoder_options, rows_of
from test_replay_model import micro_batches

import ticdc_rs.polars as tp
import ticdc_rs.spark as ts
from ticdc_rs import ReplayError


def spark_events(spark, messages, protocol):
    return ts.decode(spark.createDataFrame(messages), protocol, layout="typed", table=TABLE, schema=SCHEMA,
                     **decoder_options(protocol))


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.select("id", "v", "n").collect())


def decodes_as_it_replays(replayed) -> bool:
    """Whether the plan turns events into changes in the decoding Python task (see `ts.replay`)."""
    return "_DecodedChanges" in replayed._jdf.queryExecution().optimizedPlan().toString()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_spark_replay_is_the_model_table_and_polars(spark, protocol):
    rng = random.Random(PROTOCOLS.index(protocol))
    work = Workload.random(rng, 30)
    topic = Topic.of(work, rng)
    messages = topic.messages(protocol)
    at = work.snapshots[len(work.snapshots) // 2][0]
    as_decoded = {as_of: ts.replay(spark_events(spark, messages, protocol), as_of=as_of)
                  for as_of in ("end", at, "watermark")}
    assert all(decodes_as_it_replays(replayed) for replayed in as_decoded.values())
    as_decoded = {as_of: rows(replayed) for as_of, replayed in as_decoded.items()}
    events = spark_events(spark, messages, protocol).cache()
    assert not decodes_as_it_replays(ts.replay(events))
    assert not decodes_as_it_replays(ts.replay(spark_events(spark, messages, protocol))), "the cache holds it"
    assert rows(ts.replay(events)) == rows_of(work.final) == as_decoded["end"]
    polars_rows = tp.replay(tp.decode(messages, protocol, layout="typed", table=TABLE, schema=SCHEMA))
    assert rows(ts.replay(events)) == sorted(polars_rows.select("id", "v", "n").iter_rows())
    assert rows(ts.replay(events, as_of=at)) == rows_of(work.table_at(at)) == as_decoded[at]
    assert ts.snapshot_ts(events) == work.txns[-1].ts
    assert rows(ts.replay(events, as_of="watermark")) == rows_of(work.final) == as_decoded["watermark"]
    events.unpersist()


@pytest.mark.parametrize("split", [True, False])
def test_spark_replay_of_what_decode_returned_is_the_model_table(spark, split):
    rng = random.Random(3)  # two TRUNCATEs, nine keys moved after the last, eleven rows in the end
    work = Workload.random(rng, 40)
    topic = Topic.of(work, rng, split=split)
    replayed = ts.replay(spark_events(spark, topic.messages("open"), "open"))
    assert decodes_as_it_replays(replayed)
    assert rows(replayed) == rows_of(work.final)


def test_spark_replay_refuses_rows_that_carry_only_the_handle_key(spark):
    message = json.dumps({
        "id": 0, "database": "shop", "table": "items", "pkNames": ["id"], "isDdl": False, "type": "INSERT",
        "es": 1, "ts": 0, "sql": "", "sqlType": {"id": 4}, "mysqlType": {"id": "int"}, "old": None,
        "data": [{"id": "5"}], "_tidb": {"commitTs": 449_543_017_000_000_000, "onlyHandleKey": True},
    }).encode()
    messages = spark.createDataFrame(pa.table({"value": pa.array([message], pa.binary())}))
    events = ts.decode(messages, "canal-json", layout="typed", table="shop.items",
                       schema="CREATE TABLE items (id INT PRIMARY KEY, v INT)")
    both = [ts.replay(events), ts.replay(events.select("*"))]
    assert [decodes_as_it_replays(replayed) for replayed in both] == [True, False]
    for replayed in both:
        with pytest.raises(Exception, match="carries only the handle key"):
            replayed.collect()


def test_spark_replay_needs_a_key(spark):
    rng = random.Random(1)
    topic = Topic.of(Workload.random(rng, 5), rng)
    events = spark_events(spark, topic.messages("craft"), "craft")
    without = events.select(*[c for c in events.columns])  # the recorded key survives a projection
    assert ts.replay(without).count() >= 0
    bare = events.withMetadata("id", {})
    with pytest.raises(ReplayError, match="primary key"):
        ts.replay(bare)
    assert rows(ts.replay(bare, keys=["id"])) == rows(ts.replay(events))


@pytest.mark.parametrize(("protocol", "history"), [("open", False), ("simple-avro", True)])
def test_spark_apply_in_micro_batches_is_the_model_table(spark, protocol, history, tmp_path):
    rng = random.Random(7)
    work = Workload.random(rng, 30)
    topic = Topic.of(work, rng)
    target = str(tmp_path / "items")
    polars_target = tmp_path / "items_polars"
    resolved = None
    for batch_id, batch in enumerate(micro_batches(topic, protocol, rng)):
        events = spark_events(spark, batch.to_arrow(), protocol)
        resolved = ts.apply(events, target, history=history, batch_id=batch_id)
        assert ts.apply(events, target, history=history, batch_id=batch_id) == resolved  # skipped by Delta
        tp.apply(tp.decode(batch, protocol, layout="typed", table=TABLE, schema=SCHEMA, **decoder_options(protocol)),
                 polars_target, history=history)
    table = spark.read.format("delta").load(target)
    now = table.where("_is_current") if history else table.where("NOT _deleted")
    assert rows(now) == rows_of(work.final)
    assert resolved == work.txns[-1].ts
    spark_all = pl.from_arrow(table.toArrow()).sort(pl.all())
    from deltalake import DeltaTable

    polars_all = pl.from_arrow(DeltaTable(str(polars_target)).to_pyarrow_table()).select(spark_all.columns)
    assert spark_all.equals(polars_all.sort(pl.all())), "Spark and Polars apply the same table"
