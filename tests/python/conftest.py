"""Shared fixtures: the golden vectors (from ../shared beside the checkout, or wherever
TICDC_RS_VECTORS points; else the project's own fixtures in tests/fixtures, written by
tests/fixtures/make_fixtures.py), one local Spark session per test run (with Delta Lake and the
Kafka source and sink) and, for the tests that ask for it, one Kafka broker per test run.

`TICDC_RS_VECTORS=/nonexistent pytest` runs the suite as a CI without ../shared does."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_VECTORS = Path(os.environ.get("TICDC_RS_VECTORS") or ROOT.parent / "shared" / "vectors")
OWN_FIXTURES = ROOT / "tests" / "fixtures"

sys.path.insert(0, str(ROOT / "examples"))  # jvm.py: the jars `make jars` fetched
from kafka_broker import KafkaBroker  # noqa: E402

from jvm import with_delta_and_kafka  # noqa: E402


def vector_root() -> Path:
    return SHARED_VECTORS if SHARED_VECTORS.is_dir() else OWN_FIXTURES


def vector_files(protocol_dir: str) -> list[Path]:
    root = vector_root()
    return sorted((root / protocol_dir).glob("*.json"))


def load_vector(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def pytest_report_header(config):
    if SHARED_VECTORS.is_dir():
        return f"golden vectors: {SHARED_VECTORS}"
    return (
        f"golden vectors: {SHARED_VECTORS} is ABSENT; running the project's own fixtures "
        f"from {OWN_FIXTURES} instead"
    )


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        with_delta_and_kafka(SparkSession.builder)
        .master("local[2]")
        .appName("ticdc_rs-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")  # loopback only
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.databricks.delta.snapshotPartitions", "2")  # small tables: not 50 tasks a read
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """A Kafka broker on 127.0.0.1 (`.bootstrap`, `.create_topic(name, partitions)`), started at
    the first test that asks for it and stopped at the end of the run."""
    broker = KafkaBroker.start(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.stop()
