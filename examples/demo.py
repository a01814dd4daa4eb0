"""ticdc_rs end to end: a Kafka dump of TiCDC Canal-JSON messages, decoded with Spark and Polars.

    .venv/bin/python examples/demo.py [path/to/dump.parquet]

The dump (examples/data/orders_canal.parquet, made by examples/make_sample_data.py) has the columns
Spark's Kafka source gives (key, value, topic, partition, offset, timestamp): a changefeed of the
table `shop.orders` with its DDL, inserts, updates, deletes and watermarks over 3 partitions.
With a live Kafka topic, replace `spark.read.parquet(...)` by `spark.read.format("kafka")...`.
"""

from __future__ import annotations

import os
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

    step('current state: ticdc_rs.spark.replay(typed, keys=["id"])')
    current = ticdc_rs.spark.replay(typed, keys=["id"]).cache()
    print(f"rows in shop.orders now: {current.count()}")
    (
        current.groupBy("status")
        .agg(F.count("*").alias("orders"), F.sum("amount").alias("amount"))
        .orderBy("status")
        .show()
    )
    result = current.toArrow()
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

    step('current state: ticdc_rs.polars.replay(typed, keys=["id"])')
    current = ticdc_rs.polars.replay(typed, keys=["id"])
    print(f"rows in shop.orders now: {current.height}")
    print(current.group_by("status").agg(pl.len().alias("orders"), pl.col("amount").sum()).sort("status"))
    return current


def main() -> None:
    dump = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DUMP
    if not dump.exists():
        sys.exit(f"{dump} not found; make it with: {sys.executable} examples/make_sample_data.py")
    meta = pq.read_table(dump, columns=["partition", "offset"])
    print(f"ticdc_rs {ticdc_rs.__version__}: decoding {dump.name}, {meta.num_rows} Kafka messages "
          f"in {len(set(meta['partition'].to_pylist()))} partitions")

    spark_rows = run_spark(dump)
    polars_rows = run_polars(dump)

    heading("Spark and Polars agree?")
    a = pl.from_arrow(spark_rows).sort("id")
    b = polars_rows.sort("id").select(a.columns)
    same = a.height == b.height and a.equals(b)
    print(f"{a.height} rows from Spark, {b.height} from Polars: {'identical' if same else 'DIFFERENT'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
