"""The user's real path: TiCDC messages in a Kafka broker, read by Spark's Kafka source (batch and
Structured Streaming), decoded by `ticdc_rs.spark.decode`, written to a Delta table that Spark
and Polars (delta-rs) both read."""

from __future__ import annotations

import re

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT
from kafka_broker import produce

import ticdc_rs
import ticdc_rs.spark

DUMP = ROOT / "examples" / "data" / "orders_canal.parquet"
ORDERS_SQL = (ROOT / "examples" / "data" / "orders.sql").read_text()
CREATE_TABLE = re.search(r"CREATE TABLE .*?\n\);", ORDERS_SQL, re.DOTALL).group(0)
TYPED = {"layout": "typed", "table": "shop.orders", "schema": CREATE_TABLE}
QUERY_TIMEOUT = 300  # seconds, for each availableNow run of a streaming query


@pytest.fixture(scope="module")
def dump() -> pa.Table:
    return pq.read_table(DUMP)


def expected_events(dump: pa.Table) -> pa.Table:
    """The dump decoded in-process, with the Kafka coordinates of each event's message."""
    decoder = ticdc_rs.Decoder("canal-json", carry=["partition", "offset"], **TYPED)
    return by_message(pa.Table.from_batches([decoder.decode(b) for b in dump.to_batches()]))


def by_message(events: pa.Table) -> pa.Table:
    """Events ordered by partition and offset; a message's own events keep their order (stable)."""
    return events.sort_by([("_partition", "ascending"), ("_offset", "ascending")])


def same_events(actual: pa.Table, expected: pa.Table) -> bool:
    columns = [c for c in expected.column_names if c != "_message"]
    return by_message(actual).select(columns).to_pylist() == expected.select(columns).to_pylist()


def test_messages_land_at_their_partitions_in_order(spark, kafka):
    topic = kafka.create_topic("produce-order", partitions=2)
    messages = [(1, b"k1", b"a"), (0, None, b"b"), (1, None, b"c"), (1, b"k2", b"d"), (0, b"k3", b"e")]
    produce(spark, kafka, topic, messages)
    rows = kafka.subscribe(spark.read, topic).load().select("partition", "offset", "key", "value").collect()
    got = sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in rows)
    assert got == [(0, 0, None, b"b"), (0, 1, b"k3", b"e"),
                   (1, 0, b"k1", b"a"), (1, 1, None, b"c"), (1, 2, b"k2", b"d")]


def test_kafka_topic_decodes_like_its_dump(spark, kafka, dump):
    """The sample dump produced to a 3-partition topic comes back at the same partitions and
    offsets, and Spark decodes it to the events of the dump itself."""
    topic = kafka.create_topic("orders-batch", partitions=3)
    produce(spark, kafka, topic, dump)
    messages = kafka.subscribe(spark.read, topic).load()
    coordinates = messages.select("partition", "offset").toArrow()
    assert sorted(zip(*coordinates.to_pydict().values(), strict=True)) == sorted(
        zip(dump["partition"].to_pylist(), dump["offset"].to_pylist(), strict=True))

    events = ticdc_rs.spark.decode(messages, "canal-json", **TYPED)
    assert {"_topic", "_partition", "_offset", "_timestamp"} <= set(events.columns)
    expected = expected_events(dump)
    assert expected.num_rows > dump.num_rows / 2
    assert same_events(events.toArrow(), expected)


def test_streaming_into_delta_exactly_once_across_a_restart(spark, kafka, dump, tmp_path):
    """`readStream` from Kafka in several micro-batches, decoded and appended to a Delta table in
    `foreachBatch`; stopped, more messages produced, restarted from the checkpoint: every event
    is in the table once. Polars reads the same table through delta-rs."""
    topic = kafka.create_topic("orders-stream", partitions=3)
    table, checkpoint = str(tmp_path / "orders_events"), str(tmp_path / "checkpoint")
    batches: list[int] = []

    def write(batch, batch_id):
        batches.append(batch_id)
        batch.write.format("delta").mode("append").save(table)

    def run_until_caught_up():
        source = kafka.subscribe(spark.readStream, topic).option("maxOffsetsPerTrigger", 150).load()
        query = (
            ticdc_rs.spark.decode(source, "canal-json", **TYPED)
            .writeStream.foreachBatch(write)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(QUERY_TIMEOUT), "the streaming query did not catch up in time"
        assert query.exception() is None

    first = 400  # the dump's rows are in offset order per partition, so each part is a prefix
    produce(spark, kafka, topic, dump.slice(0, first))
    run_until_caught_up()
    assert len(batches) >= 2, "maxOffsetsPerTrigger splits the first run into micro-batches"
    in_first_run = spark.read.format("delta").load(table).count()

    produce(spark, kafka, topic, dump.slice(first))
    run_until_caught_up()
    assert batches == list(range(len(batches))) and len(batches) >= 4

    expected = expected_events(dump)
    assert 0 < in_first_run < expected.num_rows
    assert same_events(spark.read.format("delta").load(table).toArrow(), expected)
    # Delta's SQL extension (DESCRIBE HISTORY) and its catalog (delta.`path`) are loaded.
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").select("version", "operation").collect()
    assert sorted(r["version"] for r in history) == list(range(len(batches)))
    assert {r["operation"] for r in history} == {"WRITE"}
    assert spark.sql(f"SELECT count(*) AS n FROM delta.`{table}`").first()["n"] == expected.num_rows

    from deltalake import DeltaTable

    delta = DeltaTable(table)
    assert delta.version() == len(batches) - 1  # one commit per micro-batch
    assert same_events(pl.read_delta(table).to_arrow(), expected)


def test_streaming_apply_into_delta_is_exactly_once_across_a_crash_and_a_restart(spark, kafka, dump, tmp_path):
    """The user's path: Kafka -> `readStream` -> `ticdc_rs.spark.decode` -> `foreachBatch(apply)`
    into a Delta table. One micro-batch dies after its commit (before Spark records it), the
    query is stopped mid-stream and restarted from its checkpoint: the table is the replayed one,
    renumbered orders included, and records the consistent TSO."""
    from deltalake import DeltaTable

    import ticdc_rs.polars as tp

    topic = kafka.create_topic("orders-apply", partitions=3)
    target, checkpoint = str(tmp_path / "orders"), str(tmp_path / "checkpoint")
    crash_after = {1}
    seen: list[int] = []

    def apply(batch, batch_id):
        seen.append(batch_id)
        ticdc_rs.spark.apply(batch, target, batch_id=batch_id)
        if batch_id in crash_after:
            crash_after.discard(batch_id)
            raise RuntimeError("the driver dies after the commit, before the checkpoint")

    def run(expect_crash=False):
        source = kafka.subscribe(spark.readStream, topic).option("maxOffsetsPerTrigger", 150).load()
        events = ticdc_rs.spark.decode(source, "canal-json", layout="typed", table="shop.orders", schema=ORDERS_SQL)
        query = (events.writeStream.foreachBatch(apply).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        if expect_crash:
            with pytest.raises(Exception, match="dies after the commit"):
                query.awaitTermination(QUERY_TIMEOUT)
        else:
            assert query.awaitTermination(QUERY_TIMEOUT), "the streaming query did not catch up in time"
            assert query.exception() is None

    first = 400
    produce(spark, kafka, topic, dump.slice(0, first))
    run(expect_crash=True)
    assert seen == [0, 1]
    run()  # batch 1 again: Delta has it (txnAppId/txnVersion) and skips it
    assert seen[2] == 1
    produce(spark, kafka, topic, dump.slice(first))
    run()

    expected = tp.replay(tp.decode(dump, "canal-json", layout="typed", table="shop.orders"))
    table = pl.read_delta(target).filter(~pl.col("_deleted")).drop("_commit_ts", "_deleted").sort("id")
    assert table.equals(expected.select(table.columns))
    assert {1301, 1302} <= set(table["id"]) and not {1003, 1006} & set(table["id"])
    meta = DeltaTable(target).history(1)[0]["userMetadata"]
    assert f'"resolved_ts": {tp.snapshot_ts(tp.decode(dump, "canal-json"))}' in meta
