"""Every fenced code block of README.md runs as written, against the bundled sample
(examples/data/orders_canal.parquet, the table `shop.orders`), so the README cannot drift from the
package.

The blocks are read from README.md itself. Each one is known here by the heading it sits under:
RUN gives the names the block may use without defining them (the `spark` session, a Kafka stream
standing in for a broker, paths in a temporary directory) and checks what it made; SKIPPED says
why a block is not run. A block under a heading that neither names fails
`test_every_readme_block_is_accounted_for` with its first line: add it to RUN or SKIPPED.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ticdc_rs

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SAMPLE = ROOT / "examples" / "data" / "orders_canal.parquet"
TABLE = "shop.orders"
DML = ("INSERT", "UPDATE", "DELETE")


@dataclass
class Block:
    key: str  # the heading it sits under, with " #n" for the n-th block (n > 1) under it
    language: str
    line: int  # of its first line of code in README.md
    code: str

    @property
    def first_line(self) -> str:
        return next((s for s in self.code.splitlines() if s.strip()), "")


FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")


def readme_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    heading, seen = "", {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            if m := HEADING.match(lines[i]):
                heading = m.group(1)
            i += 1
            continue
        marker, language = fence.group(1), fence.group(2).lower()
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].startswith(marker):
            end += 1
        seen[heading] = seen.get(heading, 0) + 1
        key = heading if seen[heading] == 1 else f"{heading} #{seen[heading]}"
        blocks.append(Block(key, language, start + 1, "\n".join(lines[start:end]) + "\n"))
        i = end + 1
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# What the blocks are checked against: the sample decoded here, without the README's help.


@pytest.fixture(scope="module")
def sample() -> pa.Table:
    return pq.read_table(SAMPLE)


@pytest.fixture(scope="module")
def envelope(sample) -> pa.Table:
    dec = ticdc_rs.Decoder("canal-json")
    return pa.Table.from_batches([dec.decode(b) for b in sample.to_batches()])


def dml_count(ops) -> int:
    return sum(op in DML for op in ops)


# ---------------------------------------------------------------------------------------------
# The blocks that run: the names each one is given, and what is checked after it ran.


@dataclass
class Run:
    needs: Callable[[dict], dict]  # fixtures -> the names the block uses without defining them
    check: Callable[[dict, dict], None]  # (the block's namespace, fixtures) after it ran
    spark: bool = False  # whether it needs the session


def spark_names(fx):
    return {"spark": fx["spark"]}


def check_spark(ns, fx):
    envelope = fx["envelope"]
    assert ns["events"].count() == envelope.num_rows
    orders = ns["orders"]
    assert dml_count(r["_op"] for r in orders.select("_op").collect()) == dml_count(envelope["_op"].to_pylist())
    assert {"_partition", "_offset"} <= set(orders.columns), "the Kafka columns are carried"
    current = ns["current"]
    ids = [r["id"] for r in current.select("id").collect()]
    assert ids and len(ids) == len(set(ids)), "one row per key"
    fx["state"]["spark_current"] = len(ids)


def check_polars(ns, fx):
    envelope = fx["envelope"]
    orders, current = ns["orders"], ns["current"]
    assert dml_count(orders["_op"].to_list()) == dml_count(envelope["_op"].to_pylist())
    assert current.height > 0 and current["id"].n_unique() == current.height
    if "spark_current" in fx["state"]:
        assert current.height == fx["state"]["spark_current"], "Spark and Polars replay agree"
    assert ns["events"].collect().height == envelope.num_rows


def check_plain_arrow(ns, fx):
    stats = ns["dec"].stats
    assert stats["messages"] == fx["sample"].num_rows
    assert stats["errors"] == 0
    assert isinstance(ns["schema"], pa.Schema) and "id" in ns["schema"].names
    assert isinstance(ns["out"], pa.RecordBatch)


REPLAY_LAKE = "/tmp/ticdc_rs_lake/orders"  # the path the replay/apply block writes to


def replay_names(fx):
    shutil.rmtree(REPLAY_LAKE, ignore_errors=True)  # a table left by an earlier run (of older data)
    return {}


def check_replay(ns, fx):
    import polars as pl
    from deltalake import DeltaTable

    now, consistent, then, ts = ns["now"], ns["consistent"], ns["then"], ns["ts"]
    assert now.height > 0 and now["id"].n_unique() == now.height
    assert ns["orders"].filter(pl.col("_op") == "WATERMARK").height > 0 and ts > 0
    assert consistent.height > 0 and then.columns == now.columns
    assert ns["resolved"] == ts, "apply reports the table consistent up to the last watermarks"
    lake = pl.from_arrow(DeltaTable(REPLAY_LAKE).to_pyarrow_table()).filter(~pl.col("_deleted"))
    assert sorted(lake["id"].to_list()) == sorted(now["id"].to_list()), "the Delta table is the replayed table"


def simple_avro_stream(fx):
    """A stream of Simple-Avro messages (the sample's events re-encoded) over two Parquet files,
    one micro-batch each: only the first holds the table's BOOTSTRAP."""
    from pyspark.sql.pandas.types import from_arrow_schema

    tmp = fx["tmp_path"]
    records = ticdc_rs.Encoder("simple-avro").encode(fx["envelope"])
    half = records.num_rows // 2
    (tmp / "in").mkdir()
    for i, part in enumerate((records.slice(0, half), records.slice(half))):
        path = tmp / "in" / f"part-{i}.parquet"
        pq.write_table(pa.Table.from_batches([part]), path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))  # the file source goes by mtime
    stream = (
        fx["spark"]
        .readStream.schema(from_arrow_schema(records.schema))
        .option("maxFilesPerTrigger", 1)
        .parquet(str(tmp / "in"))
    )
    return {
        "spark": fx["spark"],
        "ticdc_rs": ticdc_rs,
        "kafka_stream": stream,
        "sink": str(tmp / "shop_events"),
        "checkpoint": str(tmp / "_chk"),
    }


def check_streaming(ns, fx):
    query = ns["query"]
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    spark = fx["spark"]
    sunk = spark.read.parquet(ns["sink"])
    ops = [r["_op"] for r in sunk.select("_op").collect()]
    assert "ERROR" not in ops, "the second micro-batch's rows found the first's table schema"
    assert dml_count(ops) == dml_count(fx["envelope"]["_op"].to_pylist())
    assert len(ns["known"]) >= 1
    # The restart recipe under the block: `known` again from what the sink holds.
    assert set(ticdc_rs.spark.table_schemas(spark.read.parquet(ns["sink"]))) == set(ns["known"])


def encoding_names(fx):
    events = fx["envelope"]
    pq.write_table(events, fx["tmp_path"] / "events.parquet")
    return {"events": events, "df": fx["spark"].read.parquet(str(fx["tmp_path"] / "events.parquet"))}


def check_encoding(ns, fx):
    kafka_ready = ns["kafka_ready"]
    assert kafka_ready.schema.names[:2] == ["key", "value"]
    back = ticdc_rs.Decoder("open").decode(kafka_ready)
    want = [op for op in fx["envelope"]["_op"].to_pylist() if op in DML]
    assert [op for op in back.column("_op").to_pylist() if op in DML] == want
    assert ns["encoded"].count() == kafka_ready.num_rows


RUN: dict[str, Run] = {
    "Spark": Run(spark_names, check_spark, spark=True),
    "Polars": Run(lambda fx: {}, check_polars),
    "Plain Arrow": Run(lambda fx: {}, check_plain_arrow),
    "From changes to the table: replay and apply": Run(replay_names, check_replay),
    "Structured Streaming": Run(simple_avro_stream, check_streaming, spark=True),
    "Encoding": Run(encoding_names, check_encoding, spark=True),
}

SKIPPED: dict[str, str] = {
    "ticdc_rs": "shell: `make demo` and `make test`, which .ci/run runs on a fresh clone",
    "From changes to the table: replay and apply #2": "reads a Kafka broker (broker:9092) through Spark's Kafka"
    " source, which the test session has neither of; ts.apply in foreachBatch is tested in test_replay_spark.py",
}


# ---------------------------------------------------------------------------------------------


def test_every_readme_block_is_accounted_for():
    unknown = [b for b in BLOCKS if b.key not in RUN and b.key not in SKIPPED]
    assert not unknown, "README.md blocks that no test runs or skips (add them to RUN or SKIPPED):\n" + "\n".join(
        f"  README.md:{b.line} under '{b.key}' ({b.language or 'no language'}): {b.first_line}" for b in unknown
    )
    not_python = [b for b in BLOCKS if b.key in RUN and b.language != "python"]
    assert not not_python, [f"README.md:{b.line} {b.key}: a {b.language!r} block cannot run" for b in not_python]
    keys = {b.key for b in BLOCKS}
    stale = sorted((set(RUN) | set(SKIPPED)) - keys)
    assert not stale, f"no README.md block is under these headings any more: {stale}"


@pytest.fixture(scope="module")
def state() -> dict:
    """Shared between the blocks' checks (Spark's and Polars' replays are compared)."""
    return {}


def spark_in_checkout(spark):
    """Spark resolves a relative path against the JVM's working directory, which is pytest's when
    the session started: make it the checkout's for a run started elsewhere."""
    jvm = spark._jvm
    if jvm.java.lang.System.getProperty("user.dir") != str(ROOT):
        local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark._jsc.hadoopConfiguration())
        local.setWorkingDirectory(jvm.org.apache.hadoop.fs.Path(str(ROOT)))


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.key in RUN], ids=lambda b: b.key)
def test_readme_block_runs(block, request, sample, envelope, state, tmp_path, monkeypatch):
    run = RUN[block.key]
    monkeypatch.chdir(ROOT)  # the blocks name the sample by its path in the checkout
    fx = {"sample": sample, "envelope": envelope, "state": state, "tmp_path": tmp_path}
    if run.spark:
        fx["spark"] = request.getfixturevalue("spark")
        spark_in_checkout(fx["spark"])
    namespace = {"__name__": f"readme_{block.line}", **run.needs(fx)}
    # Padded so that a traceback names the README's own line numbers.
    code = compile("\n" * (block.line - 1) + block.code, str(README), "exec")
    exec(code, namespace)
    run.check(namespace, fx)
