"""Replay and apply against a model: random transactions on a model table become TiCDC-shaped topics
in every protocol (partitions by key, watermarks, redelivered runs, key changes split and whole,
TRUNCATE), and the table replayed or applied from them must be the model's."""

from __future__ import annotations

import random

import polars as pl
import pytest
from changefeed import PROTOCOLS, SCHEMA, TABLE, Topic, Workload, decoder_options, rows_of
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ticdc_rs.polars as tp
from ticdc_rs import ReplayError

EXAMPLES = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def decode(topic: Topic, protocol: str) -> pl.DataFrame:
    return tp.decode(topic.messages(protocol), protocol, layout="typed", table=TABLE, schema=SCHEMA)


def as_rows(frame: pl.DataFrame) -> list[tuple]:
    return sorted(frame.select("id", "v", "n").iter_rows())


def current(target) -> pl.DataFrame:
    return pl.DataFrame(DeltaTable(str(target)).to_pyarrow_table()).filter(~pl.col("_deleted"))


def micro_batches(topic: Topic, protocol: str, rng: random.Random) -> list[pl.DataFrame]:
    """The topic's messages as a streaming query reads them: each micro-batch a run of offsets of
    every partition."""
    messages = pl.DataFrame(topic.messages(protocol))
    if messages.is_empty():
        return []
    cuts = sorted(rng.sample(range(1, messages.height), min(4, messages.height - 1))) if messages.height > 1 else []
    bounds = [0, *cuts, messages.height]
    ranked = messages.with_columns(pl.int_range(pl.len()).over("partition").alias("rank"),
                                   pl.len().over("partition").alias("count"))
    batches = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        share = ranked.filter((pl.col("rank") * messages.height >= lo * pl.col("count"))
                              & (pl.col("rank") * messages.height < hi * pl.col("count")))
        batches.append(share.drop("rank", "count"))
    return [b for b in batches if b.height]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_replay_to_the_end_is_the_model_table(protocol, seed):
    rng = random.Random(seed)
    work = Workload.random(rng, 30)
    events = decode(Topic.of(work, rng), protocol)
    assert as_rows(tp.replay(events)) == rows_of(work.final)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_replay_at_the_watermark_of_partitions_read_to_different_points(protocol, seed):
    rng = random.Random(seed)
    work = Workload.random(rng, 30)
    topic = Topic.of(work, rng).read_to(rng)
    events = decode(topic, protocol)
    marks = topic.last_watermarks()
    if any(m is None for m in marks):
        with pytest.raises(ReplayError, match="WATERMARK"):
            tp.replay(events, as_of="watermark", partitions=range(3))
        return
    assert tp.snapshot_ts(events, range(3)) == min(marks)
    assert as_rows(tp.replay(events, as_of="watermark", partitions=range(3))) == rows_of(work.table_at(min(marks)))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_replay_as_of_a_tso(protocol, seed):
    rng = random.Random(seed)
    work = Workload.random(rng, 25)
    events = decode(Topic.of(work, rng), protocol)
    ts = rng.choice(work.snapshots)[0] + rng.choice([0, 1])
    assert as_rows(tp.replay(events, as_of=ts)) == rows_of(work.table_at(ts))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_apply_in_micro_batches_twice_over_is_the_model_table(protocol, seed, tmp_path_factory):
    rng = random.Random(seed)
    work = Workload.random(rng, 30)
    topic = Topic.of(work, rng)
    target = tmp_path_factory.mktemp("delta") / "items"
    resolved = None
    for batch in micro_batches(topic, protocol, rng):
        events = tp.decode(batch, protocol, layout="typed", table=TABLE, schema=SCHEMA, **decoder_options(protocol))
        resolved = tp.apply(events, target)
        if rng.random() < 0.3:
            assert tp.apply(events, target) == resolved  # the same micro-batch again
    assert as_rows(current(target)) == rows_of(work.final)
    assert resolved == work.txns[-1].ts  # every partition's last watermark


@pytest.mark.parametrize("protocol", ["craft", "canal-json"])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_history_holds_the_model_table_at_every_tso(protocol, seed, tmp_path_factory):
    rng = random.Random(seed)
    work = Workload.random(rng, 25)
    topic = Topic.of(work, rng)
    target = tmp_path_factory.mktemp("delta") / "items"
    for batch in micro_batches(topic, protocol, rng):
        events = tp.decode(batch, protocol, layout="typed", table=TABLE, schema=SCHEMA, **decoder_options(protocol))
        tp.apply(events, target, history=True)
    versions = pl.DataFrame(DeltaTable(str(target)).to_pyarrow_table())
    assert as_rows(versions.filter("_is_current")) == rows_of(work.final)
    for ts, table in work.snapshots:
        current_then = pl.col("_valid_to").is_null() | (pl.col("_valid_to") > ts)
        valid = versions.filter((pl.col("_valid_from") <= ts) & current_then & ~pl.col("_deleted"))
        assert as_rows(valid) == rows_of(table), ts
