"""The JVM side of the demo and the tests: the jars `make jars` fetched into .cache/jars, and a
SparkSession builder with Delta Lake and Spark's Kafka source and sink.

    from jvm import with_delta_and_kafka
    spark = with_delta_and_kafka(SparkSession.builder.master("local[2]")).getOrCreate()

The versions go together (jvm/spark/pom.xml): pyspark 4.2.0, Delta Lake 4.4.0 built for Spark 4.2
(`io.delta:delta-spark_4.2_2.13`), `spark-sql-kafka-0-10_2.13` 4.2.0. The jars are handed to Spark
by path (`spark.jars`), since Spark's own package resolver (`spark.jars.packages`) may not reach a
registry.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JARS = ROOT / ".cache" / "jars"


def jars(name: str) -> list[Path]:
    """The jars of `.cache/jars/<name>` (one folder per pom in jvm/), sorted."""
    folder = JARS / name
    if not (folder / ".fetched").exists():
        raise FileNotFoundError(f"{folder} is missing or incomplete: run `make jars` in {ROOT}")
    return sorted(folder.glob("*.jar"))


def spark_jars() -> list[Path]:
    """Delta Lake and the Kafka connector with their dependencies, less those pyspark ships (an
    older jackson or parquet from Delta's dependency tree must not shadow Spark's own)."""
    import pyspark

    shipped = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [
        jar for jar in jars("spark")
        if not any(re.fullmatch(re.escape(jar.stem) + r"-\d.*\.jar", name) for name in shipped)
    ]


def with_delta_and_kafka(builder):
    """`builder` (a `SparkSession.Builder`) with the Delta and Kafka jars, Delta's SQL extension
    and its catalog as `spark_catalog`. Set it before the session's JVM starts."""
    paths = [str(jar) for jar in spark_jars()]
    return (
        builder.config("spark.jars", ",".join(paths))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        # Delta rebuilds a table's snapshot in 50 tasks by default: too many for a small table's log.
        .config("spark.databricks.delta.snapshotPartitions", "4")
    )
