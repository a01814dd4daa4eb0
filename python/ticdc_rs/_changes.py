"""What replay and apply mean, in terms both engines implement (`polars.py` and `spark.py`).

A typed event stream is reduced to *changes*: one row per (key, commit ts) with the row's values,
its `_commit_ts` and a `_deleted` flag. The table at a TSO holds, for each key, the change that is
greatest in *change order*, unless that change is a deletion or is at or before the last reset.

Change order is `(_commit_ts, not _deleted, _partition, _offset, position)`:

* commit ts first: TiDB's serial order of transactions;
* within one commit ts, a removal before a write. A TiDB transaction writes each row once, so two
  changes of one key at one commit ts come from a key moved within the transaction: TiCDC either
  splits the UPDATE into DELETE old + INSERT new (which may land in different Kafka partitions, so
  their offsets say nothing of their order) or sends it whole. The removal of the old key must not
  undo a write of the same key by another row of the transaction;
* then Kafka partition and offset, then the event's place in the stream: a redelivered run
  (at-least-once delivery, a changefeed restarted) repeats the same changes, which collapse.

An UPDATE whose `_before` key differs from its row's key is two changes: the old key's removal and
the new key's write. `TRUNCATE TABLE`, `DROP TABLE` and `DROP DATABASE` are *resets*: every change
at or before the reset's commit ts is gone (a table created again starts empty).

Apply keeps the greatest change per key in the target (deletions as tombstones, `_deleted = true`),
so merging micro-batches in any grouping, any number of times, gives the same table as replaying the
whole stream: the greatest of a set does not depend on how the set is split or how often a member
comes. The state a later micro-batch needs (the last reset, the partitions' watermarks) travels in
each commit's `userMetadata` (see `ApplyState`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

ROW_OPS = ("INSERT", "UPDATE", "DELETE")
# A DDL that ends every row of the table: TRUNCATE TABLE, DROP TABLE, DROP DATABASE/SCHEMA.
RESET_DDL = r"(?is)^\s*(/\*.*?\*/\s*)*(truncate\b|drop\s+table\b|drop\s+(database|schema)\b)"

COMMIT_TS, DELETED = "_commit_ts", "_deleted"
VALID_FROM, VALID_TO, IS_CURRENT = "_valid_from", "_valid_to", "_is_current"
# Tie-breakers after (commit ts, not deleted), where the events carry them.
ORDER_COLUMNS = ("_partition", "_offset")
STATE_KEY = "ticdc_rs"


class ReplayError(ValueError):
    """Events that cannot be replayed into a table (no key, an incomplete row, no watermark)."""


def table_columns(names: Iterable[str]) -> list[str]:
    return [n for n in names if not n.startswith("_")]


def resolve_keys(keys: Sequence[str] | None, recorded: Sequence[str] | None, columns: Sequence[str]) -> list[str]:
    """`keys`, else the primary key the typed schema recorded; every one must be a table column."""
    chosen = list(keys) if keys else list(recorded or [])
    if not chosen:
        raise ReplayError(
            "no key: the events' schema records no primary key (a typed schema from infer_schema, "
            "schema_from_ddl or a CREATE TABLE carries one); give keys=[...]"
        )
    missing = [k for k in chosen if k not in columns]
    if missing:
        raise ReplayError(f"key column(s) {missing} are not columns of the events")
    return chosen


def recorded_key(metadata: Mapping | None) -> list[str] | None:
    """The `primary_key` an Arrow schema's metadata records (a JSON list of names)."""
    if not metadata:
        return None
    raw = metadata.get(b"primary_key", metadata.get("primary_key"))
    return json.loads(raw) if raw else None


def check_as_of(as_of) -> None:
    if as_of in ("end", "watermark") or (isinstance(as_of, int) and not isinstance(as_of, bool)):
        return
    raise ReplayError(f'as_of must be "end", "watermark" or a TSO (int), not {as_of!r}')


def consistent_ts(last_watermarks: Mapping[object, int | None]) -> int:
    """The smallest of the partitions' last watermarks: every change at or below it has arrived
    in every partition. A partition seen without any watermark yet leaves no consistent point."""
    if not last_watermarks:
        raise ReplayError('as_of="watermark": the events hold no WATERMARK (Canal-JSON needs enable-tidb-extension)')
    waiting = sorted(str(p) for p, ts in last_watermarks.items() if ts is None)
    if waiting:
        raise ReplayError(f'as_of="watermark": partition(s) {", ".join(waiting)} have no WATERMARK yet')
    return min(ts for ts in last_watermarks.values() if ts is not None)


@dataclass
class ApplyState:
    """What a target remembers between micro-batches, in its commits' `userMetadata`.

    `resets`: the commit ts of every TRUNCATE/DROP applied (a change at or before the last one
    arriving later is void; a history closes versions at each); `watermarks`: each Kafka
    partition's last WATERMARK; `resolved_ts`: the smallest of those, the TSO up to which the
    table is complete and consistent (None before the first WATERMARK).
    """

    resets: list[int] = field(default_factory=list)
    watermarks: dict[str, int] = field(default_factory=dict)

    @property
    def reset_ts(self) -> int | None:
        return self.resets[-1] if self.resets else None

    @property
    def resolved_ts(self) -> int | None:
        return min(self.watermarks.values()) if self.watermarks else None

    def advance(self, resets: Iterable[int], watermarks: Mapping[object, int]) -> ApplyState:
        marks = dict(self.watermarks)
        for partition, ts in watermarks.items():
            key = str(partition)
            marks[key] = max(ts, marks.get(key, ts))
        return ApplyState(sorted({*self.resets, *resets}), marks)

    def to_metadata(self) -> str:
        body = {"resets": self.resets, "watermarks": self.watermarks, "resolved_ts": self.resolved_ts}
        return json.dumps({STATE_KEY: body}, sort_keys=True)

    @classmethod
    def from_history(cls, user_metadata: Iterable[str | None]) -> ApplyState:
        """The state of the newest commit (history newest first) that recorded one."""
        for text in user_metadata:
            try:
                body = json.loads(text)[STATE_KEY] if text else None
            except (ValueError, TypeError, KeyError):
                continue
            if body is not None:
                marks = {str(k): int(v) for k, v in body.get("watermarks", {}).items()}
                return cls([int(r) for r in body.get("resets", [])], marks)
        return cls()
