"""A model table and the Kafka topic a TiCDC changefeed would make of its transactions.

`Workload` plays random transactions on a model table (a dict from key to row) and keeps the table
after each commit. `Topic` shapes those transactions as a changefeed delivers them: events
dispatched to partitions by key, key-changing UPDATEs split into DELETE + INSERT or sent whole,
TRUNCATE TABLE to every partition, WATERMARKs to every partition, runs redelivered (at-least-once),
each partition encoded by our own encoder of any protocol. Replay and apply are checked against the
model, which knows nothing of events.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

import pyarrow as pa

import ticdc_rs

DDL = "CREATE TABLE `shop`.`items` (`id` INT NOT NULL, `v` VARCHAR(20), `n` BIGINT, PRIMARY KEY (`id`))"
SCHEMA = ticdc_rs.schema_from_ddl(DDL)
TABLE = "shop.items"
TRUNCATE = "TRUNCATE TABLE `shop`.`items`"
PROTOCOLS = ["open", "craft", "canal-json", "simple-json", "simple-avro"]
ENCODER_OPTIONS = {"canal-json": {"enable_tidb_extension": True}}
TS0 = 449549697944125440
KEYS = 24

Row = tuple  # (id, v, n)


@dataclass
class Txn:
    ts: int
    changes: list[tuple]  # ("INSERT", new) / ("UPDATE", old, new) / ("DELETE", old) / ("TRUNCATE",)


@dataclass
class Workload:
    """Random transactions and the model table after each."""

    txns: list[Txn] = field(default_factory=list)
    snapshots: list[tuple[int, dict[int, Row]]] = field(default_factory=list)

    @classmethod
    def random(cls, rng: random.Random, n_txns: int) -> Workload:
        work, table, ts = cls(), {}, TS0
        for _ in range(n_txns):
            ts += rng.randint(1, 4) << 18
            if table and rng.random() < 0.06:
                table = {}
                work.txns.append(Txn(ts, [("TRUNCATE",)]))
            else:
                work.txns.append(Txn(ts, _transaction(rng, table)))
            work.snapshots.append((ts, dict(table)))
        return work

    def table_at(self, ts: int) -> dict[int, Row]:
        state: dict[int, Row] = {}
        for commit_ts, snapshot in self.snapshots:
            if commit_ts > ts:
                break
            state = snapshot
        return state

    @property
    def final(self) -> dict[int, Row]:
        return self.snapshots[-1][1] if self.snapshots else {}


def _value(rng: random.Random) -> tuple:
    v = rng.choice([None, "a", "b", "ccc", "d'e", "ü"])
    n = rng.choice([None, 0, 1, -7, 2**40, rng.randint(-1000, 1000)])
    return v, n


def _transaction(rng: random.Random, table: dict[int, Row]) -> list[tuple]:
    """One transaction's changes, applied to `table`: each row key written once, keys moved
    (also into a key another row of the same transaction moved away from)."""
    changes, written = [], set()
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["INSERT", "INSERT", "UPDATE", "MOVE", "DELETE"])
        free = [k for k in range(KEYS) if k not in table and k not in written]
        held = [k for k in table if k not in written]
        if kind == "INSERT" and free:
            k = rng.choice(free)
            table[k] = (k, *_value(rng))
            changes.append(("INSERT", table[k]))
            written.add(k)
        elif kind == "UPDATE" and held:
            k = rng.choice(held)
            old, table[k] = table[k], (k, *_value(rng))
            changes.append(("UPDATE", old, table[k]))
            written.add(k)
        elif kind == "MOVE" and held and free:
            a, b = rng.choice(held), rng.choice(free)
            old = table.pop(a)
            table[b] = (b, old[1], old[2]) if rng.random() < 0.5 else (b, *_value(rng))
            changes.append(("UPDATE", old, table[b]))
            written.update((a, b))
            written.discard(a)  # its key is free again: another row may move into it
            written.add(b)
        elif kind == "DELETE" and held:
            k = rng.choice(held)
            changes.append(("DELETE", table.pop(k)))
            written.add(k)
    return changes


def _row(values: Row | None) -> dict:
    return dict(zip(("id", "v", "n"), values, strict=True)) if values else {}


@dataclass
class Topic:
    """The changefeed's topic: per partition, the events in delivery order (as typed rows)."""

    partitions: list[list[dict]]

    @classmethod
    def of(cls, work: Workload, rng: random.Random, n_partitions: int = 3, split: bool | None = None,
           redeliver: float = 0.15, watermark_every: int = 3) -> Topic:
        parts: list[list[dict]] = [[] for _ in range(n_partitions)]
        split_moves = rng.random() < 0.5 if split is None else split

        def put(partition: int, event: dict) -> None:
            parts[partition].append(event)

        base = {"_schema": "shop", "_table": "items"}
        for i, txn in enumerate(work.txns):
            events = []
            for change in txn.changes:
                op = change[0]
                if op == "TRUNCATE":
                    events.append((None, {"_op": "DDL", "_ddl": TRUNCATE, **base}))
                elif op == "INSERT":
                    events.append((change[1][0], {"_op": "INSERT", **base, **_row(change[1])}))
                elif op == "DELETE":
                    events.append((change[1][0], {"_op": "DELETE", **base, **_row(change[1])}))
                elif change[1][0] != change[2][0] and split_moves:
                    events.append((change[1][0], {"_op": "DELETE", **base, **_row(change[1])}))
                    events.append((change[2][0], {"_op": "INSERT", **base, **_row(change[2])}))
                else:
                    events.append((change[2][0], {"_op": "UPDATE", **base, **_row(change[2]),
                                                  "_before": _row(change[1])}))
            rng.shuffle(events)
            for key, event in events:
                event["_commit_ts"] = txn.ts
                targets = range(n_partitions) if key is None else [hash((key, 17)) % n_partitions]
                for p in targets:
                    put(p, dict(event))
            if i % watermark_every == watermark_every - 1 or i == len(work.txns) - 1:
                for p in range(n_partitions):
                    put(p, {"_op": "WATERMARK", "_commit_ts": txn.ts})
            for p in range(n_partitions):
                if parts[p] and rng.random() < redeliver:
                    run = rng.randint(1, min(6, len(parts[p])))
                    parts[p].extend(dict(e) for e in parts[p][-run:])
        return cls(parts)

    def read_to(self, rng: random.Random) -> Topic:
        """Each partition read to a point of its own."""
        return Topic([events[: rng.randint(0, len(events))] for events in self.partitions])

    def last_watermarks(self) -> list[int | None]:
        return [max((e["_commit_ts"] for e in events if e["_op"] == "WATERMARK"), default=None)
                for events in self.partitions]

    def messages(self, protocol: str) -> pa.Table:
        """The topic as Spark's Kafka source gives it: key, value, partition, offset, each partition
        encoded by a fresh encoder of `protocol`, partitions one after another."""
        tables = []
        for p, events in enumerate(self.partitions):
            if not events:
                continue
            encoded = ticdc_rs.Encoder(protocol, **ENCODER_OPTIONS.get(protocol, {})).encode(typed_batch(events))
            n = encoded.num_rows
            tables.append(pa.table({
                "key": encoded.column("key"),
                "value": encoded.column("value"),
                "partition": pa.array([p] * n, pa.int32()),
                "offset": pa.array(range(n), pa.int64()),
            }))
        if not tables:
            return pa.table({"key": pa.array([], pa.binary()), "value": pa.array([], pa.binary()),
                             "partition": pa.array([], pa.int32()), "offset": pa.array([], pa.int64())})
        return pa.concat_tables(tables)


@functools.cache
def table_schema() -> str:
    """The Simple protocol's tableSchema of the table (what its BOOTSTRAP and DDL messages carry)."""
    one = typed_batch([{"_op": "INSERT", "_commit_ts": TS0, "_schema": "shop", "_table": "items", "id": 1}],
                      ddl_schema=None)
    events = ticdc_rs.Decoder("simple-json").decode(ticdc_rs.Encoder("simple-json").encode(one))
    return next(t for t in events.column("_table_schema").to_pylist() if t)


def decoder_options(protocol: str) -> dict:
    """What a consumer of one micro-batch needs besides the messages: the Simple table schema
    seen before (as `ticdc_rs.spark.table_schemas` collects it)."""
    return {"table_schemas": [table_schema()]} if protocol.startswith("simple") else {}


def typed_batch(events: list[dict], ddl_schema: str | None | bool = True) -> pa.RecordBatch:
    """Typed-layout events (the input our encoders take) of the model table."""
    if ddl_schema is True:
        ddl_schema = table_schema()
    columns = [f.with_nullable(True) for f in SCHEMA]
    fields = [pa.field("_op", pa.string()), pa.field("_commit_ts", pa.int64()), pa.field("_schema", pa.string()),
              pa.field("_table", pa.string()), pa.field("_table_schema", pa.string()), pa.field("_ddl", pa.string()),
              *columns, pa.field("_before", pa.struct(columns))]
    rows = [{**e, "_table_schema": ddl_schema} if e["_op"] == "DDL" else e for e in events]
    return pa.RecordBatch.from_pylist(rows, schema=pa.schema(fields, metadata=SCHEMA.metadata))


def rows_of(table: dict[int, Row]) -> list[tuple]:
    return sorted(table.values())
