"""Spark's replay and apply give the model's table, and the same table as Polars."""

from __future__ import annotations

import random

import polars as pl
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


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_spark_replay_is_the_model_table_and_polars(spark, protocol):
    rng = random.Random(PROTOCOLS.index(protocol))
    work = Workload.random(rng, 30)
    topic = Topic.of(work, rng)
    messages = topic.messages(protocol)
    events = spark_events(spark, messages, protocol).cache()
    assert rows(ts.replay(events)) == rows_of(work.final)
    polars_rows = tp.replay(tp.decode(messages, protocol, layout="typed", table=TABLE, schema=SCHEMA))
    assert rows(ts.replay(events)) == sorted(polars_rows.select("id", "v", "n").iter_rows())
    at = work.snapshots[len(work.snapshots) // 2][0]
    assert rows(ts.replay(events, as_of=at)) == rows_of(work.table_at(at))
    assert ts.snapshot_ts(events) == work.txns[-1].ts
    assert rows(ts.replay(events, as_of="watermark")) == rows_of(work.final)
    events.unpersist()


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
