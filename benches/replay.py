"""Replay and apply beside the decode of the same changes.

    .venv/bin/python benches/replay.py                 # Polars: 1,000,000 changes; Spark: 100,000
    .venv/bin/python benches/replay.py --changes 200000 --spark-changes 20000 --reps 3

A Canal-JSON topic of one table (`id` key, five columns) holds `--changes` row changes over
200,000 keys (60% UPDATE, 25% INSERT, 15% DELETE; a tenth of the UPDATEs change the key) with a
watermark every 1,000. Polars: decode it (`ticdc_rs.polars.decode`, typed), then `replay` the
events, then `apply` them into a new Delta table (deltalake) — medians of `--reps`. Spark: one
micro-batch of `--spark-changes` through `ticdc_rs.spark.decode` alone (every column written to
Spark's `noop` sink) and decode and `replay` together (replay's cost is the difference), the two
taken in turn so that both see the same machine, then `replay` and `apply` (into a new Delta
table, then the same batch again into it) of the decoded events held in Spark's cache, then decode
and apply together.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

import ticdc_rs
import ticdc_rs.polars as tp

ROOT = Path(__file__).resolve().parents[1]
DDL = ("CREATE TABLE `bench`.`accounts` (`id` BIGINT NOT NULL, `owner` VARCHAR(40), `balance` DECIMAL(14,2), "
       "`opened` DATE, `updated` DATETIME, PRIMARY KEY (`id`))")
SCHEMA = ticdc_rs.schema_from_ddl(DDL)
TS0 = 449549697944125440


def typed_events(n: int, keys: int = 200_000, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ops = rng.choice(np.array(["INSERT", "UPDATE", "DELETE"]), size=n, p=[0.25, 0.60, 0.15])
    ids = rng.integers(0, keys, size=n)
    moved = (ops == "UPDATE") & (rng.random(n) < 0.1)
    old_ids = np.where(moved, rng.integers(keys, 2 * keys, size=n), ids)
    frame = pl.DataFrame({
        "_op": ops,
        "_commit_ts": TS0 + (np.arange(n, dtype=np.int64) << 18),
        "_schema": "bench",
        "_table": "accounts",
        "id": ids,
        "owner": pl.Series(rng.integers(0, 5000, size=n)).cast(pl.String).str.pad_start(8, "o"),
        "balance": pl.Series(rng.integers(0, 10**9, size=n)).cast(pl.Decimal(14, 2)) / 100,
        "opened": pl.Series(rng.integers(15000, 20000, size=n)).cast(pl.Date),
        "updated": pl.Series(rng.integers(0, 10**15, size=n)).cast(pl.Datetime("us")),
        "old_id": old_ids,
    }).with_columns(pl.col("balance").cast(pl.Decimal(14, 2)))
    columns = ["id", "owner", "balance", "opened", "updated"]
    before = pl.when(pl.col("_op") == "UPDATE").then(
        pl.struct(pl.col("old_id").alias("id"), *[pl.col(c) for c in columns[1:]]))
    frame = frame.with_columns(before.alias("_before")).drop("old_id")
    table = frame.to_arrow(compat_level=pl.CompatLevel.oldest())
    fields = [pa.field("_op", pa.string()), pa.field("_commit_ts", pa.int64()), pa.field("_schema", pa.string()),
              pa.field("_table", pa.string()), *[f.with_nullable(True) for f in SCHEMA],
              pa.field("_before", pa.struct([f.with_nullable(True) for f in SCHEMA]))]
    return table.cast(pa.schema(fields, metadata=SCHEMA.metadata))


def topic(n: int) -> pa.Table:
    """The changes as Canal-JSON messages on one partition, a watermark after every 1,000."""
    events = typed_events(n)
    encoder = ticdc_rs.Encoder("canal-json", enable_tidb_extension=True)
    values = []
    for start in range(0, n, 1000):
        chunk = events.slice(start, 1000).to_batches()[0]
        values.append(encoder.encode(chunk).column("value"))
        last = chunk.column("_commit_ts")[-1].as_py()
        mark = pa.RecordBatch.from_pylist([{"_op": "WATERMARK", "_commit_ts": last}], schema=chunk.schema)
        values.append(encoder.encode(mark).column("value"))
    value = pa.concat_arrays([c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in values])
    return pa.table({"value": value, "partition": pa.array(np.zeros(len(value), np.int32)),
                     "offset": pa.array(np.arange(len(value), dtype=np.int64))})


def in_turn(cases: dict, reps: int) -> dict[str, float]:
    """The median time of each case, the cases run one after the other `reps` times (after one
    run each to warm up)."""
    for fn in cases.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(reps):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def timed(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def bench_polars(n: int, reps: int) -> None:
    messages = topic(n)
    mb = messages.column("value").nbytes / 1e6
    t_decode, events = timed(lambda: tp.decode(messages, "canal-json", layout="typed", table="bench.accounts",
                                               schema=SCHEMA), reps)
    t_replay, table = timed(lambda: tp.replay(events), reps)

    def apply():
        with tempfile.TemporaryDirectory() as d:
            tp.apply(events, Path(d) / "t")

    t_apply, _ = timed(apply, reps)
    print(f"Polars, {n:,} changes ({mb:.0f} MB of Canal-JSON, {table.height:,} rows in the end); median of {reps}:")
    print(f"  decode (typed)           {t_decode:7.3f} s")
    print(f"  replay                   {t_replay:7.3f} s   {t_replay / t_decode:.2f}x the decode")
    print(f"  apply into a new Delta   {t_apply:7.3f} s   {t_apply / t_decode:.2f}x the decode")


def bench_spark(n: int, reps: int) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import ticdc_rs.spark as ts
    from jvm import with_delta_and_kafka

    spark = (with_delta_and_kafka(SparkSession.builder).master("local[*]")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "topic.parquet"
        import pyarrow.parquet as pq

        pq.write_table(topic(n), path)
        kafka = spark.read.parquet(str(path))

        def events():
            return ts.decode(kafka, "canal-json", layout="typed", table="bench.accounts", schema=SCHEMA)

        def run(df):
            df.write.format("noop").mode("overwrite").save()

        paired = in_turn({"decode": lambda: run(events()), "replay": lambda: run(ts.replay(events()))}, reps)
        t_decode, t_decode_replay = paired["decode"], paired["replay"]
        decoded = events().persist()
        decoded.count()
        t_replay, _ = timed(lambda: run(ts.replay(decoded)), reps)
        runs = iter(range(reps))
        t_apply, _ = timed(lambda: ts.apply(decoded, str(Path(d) / f"t{next(runs)}")), reps)
        t_again, _ = timed(lambda: ts.apply(decoded, str(Path(d) / "t0")), reps)
        runs = iter(range(reps))
        t_both, _ = timed(lambda: ts.apply(events(), str(Path(d) / f"u{next(runs)}")), reps)
        decoded.unpersist()
    print(f"Spark local[*], one micro-batch of {n:,} changes; median of {reps}:")
    print(f"  decode (typed)                   {t_decode:7.3f} s")
    print(f"  decode + replay                  {t_decode_replay:7.3f} s   "
          f"replay {(t_decode_replay - t_decode) / t_decode:.2f}x the decode")
    print(f"  replay of cached events          {t_replay:7.3f} s   {t_replay / t_decode:.2f}x the decode")
    print(f"  apply into a new Delta (cached)  {t_apply:7.3f} s   {t_apply / t_decode:.2f}x the decode")
    print(f"  apply it again (all matched)     {t_again:7.3f} s   {t_again / t_decode:.2f}x the decode")
    print(f"  decode + apply into a new Delta  {t_both:7.3f} s   {t_both / t_decode:.2f}x the decode")
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--spark-changes", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()
    bench_polars(args.changes, args.reps)
    if not args.no_spark:
        bench_spark(args.spark_changes, args.reps)


if __name__ == "__main__":
    main()
