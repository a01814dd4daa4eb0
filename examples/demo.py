"""ticdc_rs end to end: a Kafka dump of TiCDC Canal-JSON messages, decoded with Spark and Polars,
replayed into the table and applied, micro-batch by micro-batch, into Delta Lake tables.

    .venv/bin/python examples/demo.py [path/to/dump.parquet]

The dump (examples/data/orders_canal.parquet, made by examples/make_sample_data.py) has the columns
Spark's Kafka source gives (key, value, topic, partition, offset, timestamp): a changefeed of the
table `shop.orders` with its DDL, inserts, updates, deletes and watermarks over 3 partitions.
With a live Kafka topic, replace `spark.read.parquet(...)` by `spark.read.format("kafka")...`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Spark's Python workers must run this interpreter (it has pyarrow and ticdc_rs installed).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

import polars as pl  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import ticdc_rs  # noqa: E402
import ticdc_rs.polars  # noqa: E402
from jvm import with_delta_and_kafka  # noqa: E402  (examples/jvm.py: Delta and Kafka jars)

HERE = Path(__file__).resolve().parent
DEFAULT_DUMP = HERE / "data" / "orders_canal.parquet"
DDL = HERE / "data" / "orders.sql"
LAKE = Path(tempfile.gettempdir()) / "ticdc_rs_demo_lake"
RENUMBERED = {1003: 1301, 1006: 1302}  # examples/make_sample_data.py: one UPDATE whole, one split
TABLE = "shop.orders"


def heading(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(0, 88 - len(text)))


def step(text: str) -> None:
    print(f"\n--- {text}")


def spark_session():
    """A quiet local session (log4j at ERROR from the first line, no progress bars) with Delta Lake
    and Spark's Kafka source (jars from `make jars`)."""
    from pyspark.sql import SparkSession

    log_conf = Path(tempfile.gettempdir()) / "ticdc_rs_demo_log4j2.properties"
    log_conf.write_text(
        "rootLogger.level = error\n"
        # Spark prints a "Setting default log level" banner unless the shell's logger is configured.
        "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer\n"
        "logger.gateway.level = error\n"
        "rootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\n"
        "appender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n\n"
    )
    java_opts = f"-Dlog4j2.configurationFile={log_conf.as_uri()}"
    spark = (
        with_delta_and_kafka(SparkSession.builder)
        .master("local[*]")
        .appName("ticdc_rs demo")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_spark(dump: Path):
    from pyspark.sql import functions as F

    import ticdc_rs.spark

    heading("Spark")
    t0 = time.perf_counter()
    spark = spark_session()
    print(f"local Spark {spark.version} session started in {time.perf_counter() - t0:.1f} s")
    kafka = spark.read.parquet(str(dump))

    step("envelope layout: kafka.mapInArrow(ticdc_rs.decode, ticdc_rs.ENVELOPE_SCHEMA)")
    events = kafka.mapInArrow(ticdc_rs.decode, ticdc_rs.ENVELOPE_SCHEMA)
    events.groupBy("_op").count().orderBy(F.desc("count")).show()
    (
        events.where("_op = 'UPDATE'")
        .select(
            "_op",
            "_commit_ts",
            "_table",
            F.col("_after")["id"].alias("id"),
            F.col("_before")["status"].alias("status_before"),
            F.col("_after")["status"].alias("status_after"),
            F.col("_types")["amount"].alias("amount_type"),
            "_keys",
        )
        .show(3, truncate=False)
    )

    # Every Kafka column but key/value is carried onto each event (_topic, _partition, _offset, ...).
    step(f'typed layout: ticdc_rs.spark.decode(kafka, "canal-json", layout="typed", table="{TABLE}")')
    typed = ticdc_rs.spark.decode(kafka, "canal-json", layout="typed", table=TABLE).cache()
    columns = [f for f in typed.schema.fields if not f.name.startswith("_")]
    print("table columns (schema inferred from the messages):")
    print("  " + ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in columns))
    print("then: _before struct<same columns>, and the carried Kafka columns _topic, _partition, _offset, _timestamp")
    rows = typed.where(F.col("_op").isin("INSERT", "UPDATE", "DELETE"))
    busiest = rows.groupBy("id").count().orderBy(F.desc("count"), "id").first()["id"]
    print(f"the life of order {busiest} (row image, and _before.* for the old row of an UPDATE):")
    (
        rows.where(F.col("id") == busiest)
        .select("_op", "_commit_ts", "_partition", "_offset", "customer", "amount", "qty",
                F.col("_before.status").alias("old_status"), "status", "ship_date", "updated_at")
        .orderBy("_commit_ts", "_partition", "_offset")
        .show(truncate=False)
    )

    step("DDL and watermark events (kept in the typed layout; their table columns are null)")
    (
        typed.where("_op = 'DDL'")
        .select("_commit_ts", "_schema", "_table", "_ddl_type",
                F.regexp_replace(F.substring("_ddl", 1, 60), r"\s+", " ").alias("_ddl (first 60 chars)"))
        .orderBy("_commit_ts")
        .show(truncate=False)
    )
    (
        typed.where("_op = 'WATERMARK'")
        .groupBy("_partition")
        .agg(F.count("*").alias("watermarks"), F.max("_commit_ts").alias("last_watermark_ts"),
             F.max("_offset").alias("last_offset"))
        .orderBy("_partition")
        .show(truncate=False)
    )

    step("renumbered orders: an UPDATE of the key sent whole, and one split into DELETE + INSERT")
    first_seen = rows.where(F.col("id").isin(*RENUMBERED.values())).groupBy("id").agg(F.min("_commit_ts"))
    (
        rows.where(F.col("_commit_ts").isin([r[1] for r in first_seen.collect()]))
        .select("_op", "_commit_ts", "_partition", "_offset", F.col("_before.id").alias("old_id"), "id", "customer")
        .orderBy("_commit_ts", "_op")
        .show(truncate=False)
    )

    step("the table: ticdc_rs.spark.replay(typed)  (key: the primary key the typed schema records)")
    current = ticdc_rs.spark.replay(typed).cache()
    print(f"rows in shop.orders now: {current.count()}")
    by_status = current.groupBy("status").agg(F.count("*").alias("orders"), F.sum("amount").alias("amount"))
    by_status.orderBy("status").show()
    snapshot = ticdc_rs.spark.snapshot_ts(typed)
    consistent = ticdc_rs.spark.replay(typed, as_of="watermark").count()
    print(f'as_of="watermark": {consistent} rows, consistent at TSO {snapshot} (every partition delivered it)')

    step("into Delta Lake: ticdc_rs.spark.apply(batch, path, batch_id=i), one micro-batch per 100 offsets")
    target = str(LAKE / "orders_spark")
    last_offset = kafka.agg(F.max("offset")).first()[0]
    for batch_id, lo in enumerate(range(0, last_offset + 1, 100)):
        batch = typed.where((F.col("_offset") >= lo) & (F.col("_offset") < lo + 100))
        resolved = ticdc_rs.spark.apply(batch, target, batch_id=batch_id)
        print(f"  micro-batch {batch_id}: offsets [{lo}, {lo + 100}) applied; consistent up to TSO {resolved}")
    again = ticdc_rs.spark.apply(typed.where(F.col("_offset") < 100), target)
    print(f"  micro-batch 0 applied once more (a redelivery): consistent up to TSO {again}, nothing changed")
    delta = spark.read.format("delta").load(target)
    print(f"{target}: {delta.where('NOT _deleted').count()} rows, {delta.where('_deleted').count()} tombstones")
    result = current.toArrow(), delta.where("NOT _deleted").drop("_commit_ts", "_deleted").toArrow()
    spark.stop()
    return result


def run_polars(dump: Path):
    heading("Polars")
    pl.Config.set_tbl_hide_dataframe_shape(True)
    pl.Config.set_tbl_width_chars(140)
    pl.Config.set_fmt_str_lengths(40)
    pl.Config.set_tbl_cols(12)

    step(f'typed layout: ticdc_rs.polars.decode(path, "canal-json", layout="typed", table="{TABLE}")')
    t0 = time.perf_counter()
    typed = ticdc_rs.polars.decode(dump, "canal-json", layout="typed", table=TABLE)
    print(f"{typed.height} events x {typed.width} columns in {1000 * (time.perf_counter() - t0):.1f} ms")
    print(typed.group_by("_op").len().sort("len", descending=True))
    print(
        typed.filter(pl.col("_op") == "UPDATE")
        .select("_commit_ts", "id", "customer", "amount",
                pl.col("_before").struct.field("status").alias("old_status"), "status", "ship_date", "updated_at")
        .head(4)
    )

    step("DDL and watermarks")
    print(typed.filter(pl.col("_op") == "DDL").select(
        "_commit_ts", "_table", "_ddl_type", pl.col("_ddl").str.replace_all(r"\s+", " ").str.slice(0, 60)))
    wm = typed.filter(pl.col("_op") == "WATERMARK")
    print(f"{wm.height} watermarks; resolved up to ts {wm['_commit_ts'].max()} "
          f"(physical time {wm['_commit_ts'].max() >> 18} ms since epoch)")

    step("the table: ticdc_rs.polars.replay(typed)")
    current = ticdc_rs.polars.replay(typed)
    print(f"rows in shop.orders now: {current.height}")
    print(current.group_by("status").agg(pl.len().alias("orders"), pl.col("amount").sum()).sort("status"))

    step("into Delta Lake: ticdc_rs.polars.apply(events, path), the messages in four micro-batches")
    target = LAKE / "orders_polars"
    messages = pq.read_table(dump)
    for i, batch in enumerate(messages.to_batches(max_chunksize=messages.num_rows // 4 + 1)):
        # A micro-batch may not hold the CREATE TABLE: the schema comes from the DDL script.
        events = ticdc_rs.polars.decode(batch, "canal-json", layout="typed", table=TABLE, schema=DDL.read_text())
        resolved = ticdc_rs.polars.apply(events, target)
        print(f"  micro-batch {i}: {batch.num_rows} messages applied; consistent up to TSO {resolved}")
    from deltalake import DeltaTable

    delta = pl.from_arrow(DeltaTable(target).to_pyarrow_table())
    print(f"{target}: {delta.filter(~pl.col('_deleted')).height} rows, {delta['_deleted'].sum()} tombstones")
    return current, delta.filter(~pl.col("_deleted")).drop("_commit_ts", "_deleted")


def main() -> None:
    dump = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DUMP
    if not dump.exists():
        sys.exit(f"{dump} not found; make it with: {sys.executable} examples/make_sample_data.py")
    meta = pq.read_table(dump, columns=["partition", "offset"])
    print(f"ticdc_rs {ticdc_rs.__version__}: decoding {dump.name}, {meta.num_rows} Kafka messages "
          f"in {len(set(meta['partition'].to_pylist()))} partitions")

    shutil.rmtree(LAKE, ignore_errors=True)
    spark_replay, spark_delta = run_spark(dump)
    polars_replay, polars_delta = run_polars(dump)

    heading("Spark and Polars agree?")
    tables = {
        "Spark replay": pl.from_arrow(spark_replay),
        "Spark -> Delta": pl.from_arrow(spark_delta),
        "Polars replay": polars_replay,
        "Polars -> Delta": polars_delta,
    }
    reference = tables["Polars replay"].sort("id")
    ok = True
    for name, table in tables.items():
        same = table.height == reference.height and table.select(reference.columns).sort("id").equals(reference)
        ok &= same
        print(f"  {name:16} {table.height} rows: {'identical' if same else 'DIFFERENT'}")
    ids = set(reference["id"].to_list())
    for old, new in RENUMBERED.items():
        moved = new in ids and old not in ids
        ok &= moved
        print(f"  order {old} renumbered {new}: {'only the new key is in the table' if moved else 'WRONG'}")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
