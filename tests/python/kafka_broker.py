"""A real Apache Kafka broker for the tests: one KRaft node (broker and controller in one JVM) on
127.0.0.1, started from the jars `make jars` put in .cache/jars/kafka, and a way to fill a topic
at exact partitions through Spark's own Kafka sink.

    broker = KafkaBroker.start(tmp_dir)          # the session fixture `kafka` does this, lazily
    broker.create_topic("orders", partitions=3)
    produce(spark, broker, "orders", table)      # rows with partition, key, value
    messages = broker.subscribe(spark.readStream, "orders").load()
    broker.stop()
"""

from __future__ import annotations

import base64
import ctypes
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from jvm import jars

START_TIMEOUT = 120.0  # seconds; a cold JVM on two busy cores takes 10-40 s to bring KRaft up
READY = "Kafka Server started"

LOG4J = """\
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
"""


LIBC = ctypes.CDLL(None) if sys.platform == "linux" else None


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies, even by SIGKILL, so that no
    broker outlives its test run (Linux; elsewhere the fixture's teardown alone stops it)."""
    if LIBC is not None:
        LIBC.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_id() -> str:
    """A random KRaft cluster id: a UUID in URL-safe base64. Like Kafka's `Uuid.randomUuid`, it
    never starts with `-`, which `kafka-storage format -t` would read as an option (one id in 64)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KafkaBroker:
    """A running single-node broker: `bootstrap` is "127.0.0.1:PORT"."""

    def __init__(self, workdir: Path, process: subprocess.Popen, port: int):
        self.workdir = workdir
        self.process = process
        self.bootstrap = f"127.0.0.1:{port}"
        self.log = workdir / "broker.log"

    @staticmethod
    def java(*args: str) -> list[str]:
        classpath = str(jars("kafka")[0].parent / "*")
        return ["java", "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-cp", classpath, *args]

    @classmethod
    def start(cls, workdir: Path, timeout: float = START_TIMEOUT) -> KafkaBroker:
        workdir.mkdir(parents=True, exist_ok=True)
        port, controller = free_port(), free_port()
        config = workdir / "server.properties"
        config.write_text(
            "process.roles=broker,controller\n"
            "node.id=1\n"
            f"controller.quorum.voters=1@127.0.0.1:{controller}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n"
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
            "controller.listener.names=CONTROLLER\n"
            "inter.broker.listener.name=PLAINTEXT\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"log.dirs={workdir / 'data'}\n"
            "offsets.topic.replication.factor=1\n"
            "offsets.topic.num.partitions=1\n"
            "transaction.state.log.replication.factor=1\n"
            "transaction.state.log.min.isr=1\n"
            "share.coordinator.state.topic.replication.factor=1\n"
            "share.coordinator.state.topic.min.isr=1\n"
            "group.initial.rebalance.delay.ms=0\n"
            "auto.create.topics.enable=false\n"
        )
        log4j = workdir / "log4j2.properties"
        log4j.write_text(LOG4J)
        subprocess.run(
            cls.java("kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(config)),
            check=True, capture_output=True, timeout=timeout,
        )
        with open(workdir / "broker.log", "wb") as log:
            process = subprocess.Popen(
                cls.java(f"-Dlog4j2.configurationFile={log4j.as_uri()}", "kafka.Kafka", str(config)),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,  # noqa: PLW1509  (one system call, nothing that may lock)
            )
        broker = cls(workdir, process, port)
        try:
            broker.wait_ready(timeout)
        except BaseException:
            broker.stop()
            raise
        return broker

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while READY not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited with {self.process.returncode}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Kafka broker did not start in {timeout:.0f} s:\n{self.tail()}")
            time.sleep(0.2)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def create_topic(self, name: str, partitions: int = 1) -> str:
        """Creates `name` with `partitions` partitions (replication 1) and returns it. Topics live
        as long as the broker (the test run): give each test topics of its own."""
        run = subprocess.run(
            self.java(
                "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", self.bootstrap, "--create",
                "--topic", name, "--partitions", str(partitions), "--replication-factor", "1",
            ),
            capture_output=True, text=True, timeout=120, check=False,
        )
        if run.returncode != 0:
            raise RuntimeError(f"could not create topic {name!r}:\n{run.stdout}{run.stderr}")
        return name

    def subscribe(self, reader, topic: str):
        """`reader` (`spark.read` or `spark.readStream`) set to read `topic` from its start."""
        return (
            reader.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
        )

    def stop(self, timeout: float = 30.0) -> None:
        """Stops the broker (SIGTERM, then SIGKILL after `timeout` s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def produce(spark, broker: KafkaBroker, topic: str, messages) -> None:
    """Writes `messages` to `topic` through Spark's Kafka sink, at exact partitions.

    `messages`: a pyarrow Table (or anything `spark.createDataFrame` takes) with `value`, `partition`
    and optionally `key` columns (others, such as a dump's `topic` or `offset`, are ignored), or a
    list of (partition, key, value) tuples. One task writes them all with one producer, so each
    partition's offsets follow the order of its rows.
    """
    if isinstance(messages, list):
        messages = spark.createDataFrame(messages, "partition int, key binary, value binary")
    elif not hasattr(messages, "sparkSession"):
        messages = spark.createDataFrame(messages)
    columns = [c for c in ("partition", "key", "value") if c in messages.columns]
    (
        messages.select(*columns)
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .save()
    )
