"""Polars adapter: decode dumps of Kafka messages and replay them into a table's current state.

    events = ticdc_rs.polars.decode("dump.parquet", "canal-json")
    orders = ticdc_rs.polars.decode(table, "canal-json", layout="typed", table="shop.orders")
    current = ticdc_rs.polars.replay(orders, keys=["id"])

In the typed layout, text and binary columns come out as Arrow views (utf8_view, binary_view),
which Polars stores natively: a value that is a verbatim byte range of its message (a Craft or
Avro string, a JSON string without escapes) points into the input buffer instead of being copied.
`views=False` gives plain utf8/binary.

`source` may be a path to a Parquet file (Kafka-shaped: key, value, partition, offset, ...), a
pyarrow Table or RecordBatch, or a Polars DataFrame. Columns besides `key` and `value` are
carried onto the events as `_partition`, `_offset`, ... .
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ticdc_rs import Decoder, _as_schema, infer_schema
from ticdc_rs._changes import (
    COMMIT_TS,
    DELETED,
    IS_CURRENT,
    ORDER_COLUMNS,
    RESET_DDL,
    ROW_OPS,
    VALID_FROM,
    VALID_TO,
    ApplyState,
    ReplayError,
    check_as_of,
    consistent_ts,
    recorded_key,
    resolve_keys,
    table_columns,
)


def _batches(source, batch_size: int = 65_536) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    if isinstance(source, (str, Path)):
        f = pq.ParquetFile(source)
        return f.schema_arrow, f.iter_batches(batch_size=batch_size)
    if isinstance(source, pl.DataFrame):
        source = source.to_arrow()
    if isinstance(source, pa.RecordBatch):
        source = pa.Table.from_batches([source])
    if isinstance(source, pa.Table):
        return source.schema, iter(source.to_batches(max_chunksize=batch_size))
    raise TypeError(f"cannot read messages from {type(source).__name__}")


def _with_views(schema: pa.Schema) -> pa.Schema:
    """`schema` with utf8/binary columns as their view types (field metadata kept)."""
    views = {pa.string(): pa.string_view(), pa.large_string(): pa.string_view(),
             pa.binary(): pa.binary_view(), pa.large_binary(): pa.binary_view()}
    fields = [f.with_type(views.get(f.type, f.type)) for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def _decoder_options(schema: pa.Schema, source, protocol: str, carry, views: bool, options) -> dict:
    """`Decoder`'s options, with the carried columns and the typed schema worked out."""
    key_column = options.get("key_column", "key")
    value_column = options.get("value_column", "value")
    if carry is None:
        carry = [f for f in schema if f.name not in (key_column, value_column)]
    if options.get("layout") == "typed" and options.get("schema") is None:
        _, sample = _batches(source)
        options["schema"] = infer_schema(
            list(sample),
            protocol,
            options.get("table"),
            compression=options.get("compression", "none"),
            key_column=key_column,
            value_column=value_column,
            table_schemas=options.get("table_schemas", ()),
        )
    if options.get("layout") == "typed" and views:
        options["schema"] = _with_views(_as_schema(options["schema"]))
    return {"carry": carry, **options}


def _events(decoder: Decoder, batches: Iterator[pa.RecordBatch]) -> Iterator:
    """Each batch's events, then at the end of the stream the Simple rows whose schema never
    came (as errors per `on_error`): nothing is dropped unsaid."""
    for b in batches:
        yield decoder.decode_native(b)
    tail = decoder.flush()
    if tail.num_rows:
        yield tail


def decode(
    source, protocol: str = "auto", *, carry: Sequence | None = None, views: bool = True, **options
) -> pl.DataFrame:
    """All events of `source`'s messages as one DataFrame. `options` are `Decoder`'s."""
    schema, batches = _batches(source)
    decoder = Decoder(protocol, **_decoder_options(schema, source, protocol, carry, views, options))
    out_schema = pa.schema(decoder.schema)
    frames = [pl.DataFrame(o) for o in _events(decoder, batches)]
    if not frames:
        return _remember_keys(pl.DataFrame(out_schema.empty_table()), out_schema)
    return _remember_keys(pl.concat(frames, how="vertical", rechunk=False), out_schema)


def scan(
    source, protocol: str = "auto", *, carry: Sequence | None = None, views: bool = True, **options
) -> pl.LazyFrame:
    """A LazyFrame over `source`'s events, decoded batch by batch as Polars pulls them."""
    from polars.io.plugins import register_io_source

    schema, _ = _batches(source)
    resolved = _decoder_options(schema, source, protocol, carry, views, options)
    out_schema = pl.DataFrame(pa.schema(Decoder(protocol, **resolved).schema).empty_table()).schema

    def io_source(with_columns, predicate, n_rows, batch_size):
        # A fresh decoder per pass: each collect reads the stream from its start.
        decoder = Decoder(protocol, **resolved)
        _, batches = _batches(source, batch_size or 65_536)
        remaining = n_rows
        for events in _events(decoder, batches):
            df = pl.DataFrame(events)
            if with_columns is not None:
                df = df.select(with_columns)
            if predicate is not None:
                df = df.filter(predicate)
            if remaining is not None:
                df = df.head(remaining)
                remaining -= df.height
            yield df
            if remaining is not None and remaining <= 0:
                return

    return register_io_source(io_source, schema=out_schema)


# ---------------------------------------------------------------------------------------------
# Replay and apply: the table from its changes (the rules are in `ticdc_rs._changes`).

_KEYS: dict[int, tuple[weakref.ref, list[str]]] = {}


def _remember_keys(frame: pl.DataFrame, schema: pa.Schema) -> pl.DataFrame:
    """Polars keeps no schema metadata: the primary key of a decoded frame is kept beside it."""
    keys = recorded_key(schema.metadata)
    if keys:
        ident = id(frame)
        _KEYS[ident] = (weakref.ref(frame, lambda _: _KEYS.pop(ident, None)), keys)
    return frame


def _recorded_keys(events) -> list[str] | None:
    if isinstance(events, (pa.Table, pa.RecordBatch)):
        return recorded_key(events.schema.metadata)
    entry = _KEYS.get(id(events))
    return entry[1] if entry is not None and entry[0]() is events else None


def _frame(events) -> pl.DataFrame:
    if isinstance(events, pl.DataFrame):
        return events
    if isinstance(events, pl.LazyFrame):
        return events.collect()
    if isinstance(events, (pa.Table, pa.RecordBatch)):
        return pl.DataFrame(events)
    raise TypeError(f"events must be a Polars DataFrame or a pyarrow Table/RecordBatch, not {type(events).__name__}")


def last_watermarks(events, partitions: Iterable[int] = ()) -> dict:
    """Each Kafka partition's last WATERMARK ts: of the partitions the events come from (their
    `_partition`) and of `partitions`; None for one without a WATERMARK yet."""
    events = _frame(events)
    part = pl.col("_partition") if "_partition" in events.columns else pl.lit(0)
    seen = events.select(part.alias("p")).unique()["p"].to_list()
    marks = events.filter(pl.col("_op") == "WATERMARK").group_by(part.alias("p")).agg(pl.col("_commit_ts").max())
    last = dict(zip(marks["p"].to_list(), marks["_commit_ts"].to_list(), strict=True))
    return {p: last.get(p) for p in dict.fromkeys([*seen, *partitions])}


def snapshot_ts(events, partitions: Iterable[int] = ()) -> int:
    """The TSO of the transactionally consistent snapshot `replay(..., as_of="watermark")` gives:
    the smallest of the partitions' last WATERMARKs. Name the topic's `partitions` when some
    may not show in the events (read to no message yet)."""
    return consistent_ts(last_watermarks(events, partitions))


def _limit(events: pl.DataFrame, as_of, partitions: Iterable[int]) -> int | None:
    check_as_of(as_of)
    if as_of == "end":
        return None
    return snapshot_ts(events, partitions) if as_of == "watermark" else as_of


def _resets(events: pl.DataFrame, limit: int | None) -> list[int]:
    """Commit ts of the TRUNCATE / DROP DDLs (at or before `limit`), ascending."""
    ddl = events.filter((pl.col("_op") == "DDL") & pl.col("_ddl").str.contains(RESET_DDL))
    if limit is not None:
        ddl = ddl.filter(pl.col("_commit_ts") <= limit)
    return sorted(set(ddl["_commit_ts"].to_list()))


def _changes(events: pl.DataFrame, keys: list[str], limit: int | None, after: int | None,
             payload: bool = True) -> pl.DataFrame:
    """Every change of the events (commit ts in (after, limit]) in change order, one row each:
    the table's columns (only the key with `payload=False`), `_commit_ts`, `_deleted`, the order
    columns and `__position`, the event's row in `events`."""
    columns = table_columns(events.columns) if payload else keys
    order = [c for c in ORDER_COLUMNS if c in events.columns]
    rows = events.with_row_index("__position").filter(pl.col("_op").is_in(ROW_OPS))
    if limit is not None:
        rows = rows.filter(pl.col(COMMIT_TS) <= limit)
    if after is not None:
        rows = rows.filter(pl.col(COMMIT_TS) > after)
    _check_complete(rows)
    tail = [COMMIT_TS, *order, "__position"]
    writes = rows.select(*columns, (pl.col("_op") == "DELETE").alias(DELETED), *tail)
    parts = [writes]
    if "_before" in rows.columns:
        old = {c: pl.coalesce(pl.col("_before").struct.field(c), pl.col(c)) for c in columns}
        moved = pl.any_horizontal([old[k] != pl.col(k) for k in keys])
        is_move = (pl.col("_op") == "UPDATE") & pl.col("_before").is_not_null() & moved
        removed = rows.filter(is_move).select(*[old[c].alias(c) for c in columns], pl.lit(True).alias(DELETED), *tail)
        parts.append(removed)
    return _in_change_order(pl.concat(parts, how="vertical"))


def _in_change_order(changes: pl.DataFrame) -> pl.DataFrame:
    order = [COMMIT_TS, DELETED, *[c for c in ORDER_COLUMNS if c in changes.columns], "__position"]
    order = [c for c in order if c in changes.columns]
    return changes.sort(order, descending=[c == DELETED for c in order], nulls_last=False)


def _check_complete(rows: pl.DataFrame) -> None:
    if "_handle_key_only" not in rows.columns or "_claim_check" not in rows.columns:
        return
    incomplete = pl.col("_handle_key_only").fill_null(False) | pl.col("_claim_check").is_not_null()
    partial = rows.filter((pl.col("_op") != "DELETE") & incomplete)
    if partial.height:
        first = partial.row(0, named=True)
        raise ReplayError(
            f"{partial.height} INSERT/UPDATE event(s) carry only the handle key or a claim-check location "
            f"(first at commit ts {first[COMMIT_TS]}): decode with claim_check_dir= to read their rows"
        )


def _latest(changes: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The greatest change per key (`changes` is in change order)."""
    return changes.unique(subset=keys, keep="last")


def _rows_at(events: pl.DataFrame, latest: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """The events' rows the live changes of `latest` point to, with their `_commit_ts`."""
    live = latest.filter(~pl.col(DELETED)).select("__position", COMMIT_TS)
    return events.select(columns).with_row_index("__position").join(live, on="__position").drop("__position")


def replay(events, keys: Sequence[str] | None = None, *, as_of: str | int = "end",
           partitions: Iterable[int] = ()) -> pl.DataFrame:
    """The table the typed `events` of one table build: its rows as of `as_of`, sorted by key.

    `keys` defaults to the primary key of the typed schema (`decode(..., layout="typed")` and
    pyarrow input keep it). `as_of`: `"end"` (every change), `"watermark"` (the consistent snapshot
    at `snapshot_ts(events, partitions)`) or a TSO. See `ticdc_rs._changes` for the rules.
    """
    recorded = _recorded_keys(events)
    events = _frame(events)
    columns = table_columns(events.columns)
    keys = resolve_keys(keys, recorded, columns)
    limit = _limit(events, as_of, partitions)
    resets = _resets(events, limit)
    latest = _latest(_changes(events, keys, limit, resets[-1] if resets else None, payload=False), keys)
    return _rows_at(events, latest, columns).select(columns).sort(keys)


def replay_tables(source, protocol: str = "auto", *, tables: Sequence[str] | None = None, as_of="end",
                  **options) -> dict[str, pl.DataFrame]:
    """Every table of a multi-table topic replayed: `{"db.table": rows}`, each by its primary key
    (schema inferred per table unless `schema=` is given).

    One pass finds which messages hold which table (events without a table, such as watermarks,
    belong to all); each table is then decoded in the typed layout from its own messages only, so
    the typed decoding of a topic of many tables costs about one decode of the topic."""
    schema, batches = _batches(source)
    messages = pa.Table.from_batches(list(batches), schema=schema)
    numbered = messages.append_column("row", pa.array(range(messages.num_rows), pa.int64()))
    envelope = decode(numbered, protocol, carry=[pa.field("row", pa.int64())],
                      **{k: v for k, v in options.items() if k != "schema"})
    # "db.table", null for an event without a table (concat_str is null where a part is).
    named = envelope.select("_row", "_op", pl.concat_str([pl.col("_schema"), pl.col("_table")], separator=".")
                            .alias("name"))
    if tables is None:
        tables = sorted(named.filter(pl.col("_op").is_in(ROW_OPS))["name"].unique().to_list())
    out = {}
    for name in tables:
        own = named.filter(pl.col("name").is_null() | (pl.col("name") == name))["_row"].unique().sort()
        typed = decode(messages.take(own.to_arrow()), protocol, layout="typed", table=name, **options)
        out[name] = replay(typed, as_of=as_of)
    return out


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _delta_table(target):
    from deltalake import DeltaTable

    return DeltaTable(target) if DeltaTable.is_deltatable(str(target)) else None


def _arrow(frame: pl.DataFrame) -> pa.Table:
    # Plain (large) string/binary layouts: the Delta writer's, and what Spark reads back.
    return frame.to_arrow(compat_level=pl.CompatLevel.oldest())


def apply(events, target, keys: Sequence[str] | None = None, *, history: bool = False,
          batch_id: int | None = None, app_id: str = "ticdc_rs") -> int | None:
    """Merge the typed `events` of one table into the Delta table at `target` (created when
    absent) and return the TSO up to which it is complete and consistent (None until every
    partition has sent a WATERMARK).

    Idempotent: applying micro-batches of any size, any number of times, in any grouping, gives
    the table `replay` gives. The target holds the table's columns, `_commit_ts` (the row's last
    change) and `_deleted` (a tombstone, kept so that a late, older change of a deleted key is
    ignored): read the current table as `_deleted = false`. With `history=True` it holds every
    version instead (SCD type 2): `_valid_from`, `_valid_to` (TSOs; null while current),
    `_is_current` and `_deleted`. With `batch_id`, the commit records the Delta transaction
    (`app_id`, `batch_id`) and a batch at or below the last one recorded is skipped.
    """
    from deltalake import CommitProperties, Transaction, write_deltalake

    recorded = _recorded_keys(events)
    events = _time_as_micros(_frame(events))
    columns = table_columns(events.columns)
    keys = resolve_keys(keys, recorded, columns)
    table = _delta_table(target)
    if table is not None and batch_id is not None:
        done = table.transaction_version(app_id)
        if done is not None and batch_id <= done:
            return _state(table).resolved_ts
    state = _state(table) if table is not None else ApplyState()
    resets = [r for r in _resets(events, None) if r not in state.resets]
    marks = {p: ts for p, ts in last_watermarks(events).items() if ts is not None}
    new_state = state.advance(resets, marks)
    if history:
        source = _versions(_changes(events, keys, None, None), keys, columns, table, state.resets, resets)
        on = [*keys, VALID_FROM]
        update = None
    else:
        changes = _changes(events, keys, None, new_state.reset_ts, payload=False)
        if resets and resets[-1] == new_state.reset_ts:
            changes = _with_truncation(changes, keys, table, resets[-1])
        latest = _latest(changes, keys)
        source = pl.concat([
            _rows_at(events, latest, columns).with_columns(pl.lit(False).alias(DELETED)),
            latest.filter(pl.col(DELETED)).select(*keys, COMMIT_TS, DELETED),
        ], how="diagonal_relaxed").select(*columns, COMMIT_TS, DELETED)
        on = keys
        update = (f"s.{COMMIT_TS} > t.{COMMIT_TS} OR (s.{COMMIT_TS} = t.{COMMIT_TS} "
                  f"AND t.{DELETED} AND NOT s.{DELETED})")
    # Relaxed concatenation may widen a type (a decimal's precision); the table keeps the events'.
    data = _arrow(source.cast({c: events.schema[c] for c in columns}))
    commit = CommitProperties(
        custom_metadata={"userMetadata": new_state.to_metadata()},
        app_transactions=[Transaction(app_id, batch_id)] if batch_id is not None else None,
    )
    if table is None:
        write_deltalake(target, data, commit_properties=commit)
        return new_state.resolved_ts
    predicate = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in on)
    held = pa.schema(table.schema().to_arrow())
    merge = table.merge(_as_held(data, held), predicate, source_alias="s", target_alias="t", merge_schema=True,
                        commit_properties=commit)
    version = table.version()
    merge.when_matched_update_all(predicate=update).when_not_matched_insert_all().execute()
    table.update_incremental()
    if table.version() == version:
        # delta-rs commits no MERGE that changes no row; the state (watermarks) must still land.
        write_deltalake(target, held.empty_table(), mode="append", commit_properties=commit)
    return new_state.resolved_ts


def _time_as_micros(events: pl.DataFrame) -> pl.DataFrame:
    """MySQL TIME columns (durations) as their microseconds, an int64, also in `_before`: Delta
    has no type for a TIME, which spans -838:59:59 to 838:59:59."""
    times = [pl.col(c).dt.total_microseconds() for c, t in events.schema.items() if isinstance(t, pl.Duration)]
    before = events.schema.get("_before")
    if isinstance(before, pl.Struct):
        old = [pl.field(f.name).dt.total_microseconds() for f in before.fields if isinstance(f.dtype, pl.Duration)]
        if old:
            times.append(pl.col("_before").struct.with_fields(old))
    return events.with_columns(times) if times else events


def _as_held(data: pa.Table, held: pa.Schema) -> pa.Table:
    """`data` with numbers in the width the target holds them (a schema inferred from a later
    micro-batch may say DECIMAL(38, s) where the table, made from the CREATE TABLE, says
    DECIMAL(12, s)); a value that does not fit is an error, not a silent loss."""
    same_kind = (pa.types.is_decimal, pa.types.is_integer, pa.types.is_floating)
    for i, f in enumerate(data.schema):
        if f.name in held.names:
            want = held.field(f.name).type
            if want != f.type and any(kind(want) and kind(f.type) for kind in same_kind):
                data = data.set_column(i, f.name, data.column(i).cast(want))
    return data


def _state(table) -> ApplyState:
    return ApplyState.from_history(c.get("userMetadata") for c in table.history(100))


def _live_keys(table, keys: list[str], before: int) -> pl.DataFrame:
    """The keys the target holds live with a change before `before`."""
    if table is None:
        return pl.DataFrame()
    held = pl.DataFrame(table.to_pyarrow_table(columns=[*keys, COMMIT_TS, DELETED]))
    return held.filter(~pl.col(DELETED) & (pl.col(COMMIT_TS) < before)).select(keys)


def _with_truncation(changes: pl.DataFrame, keys, table, reset: int) -> pl.DataFrame:
    """`changes` (all after `reset`) preceded by the removal, at `reset`, of every key the target
    holds live: a TRUNCATE in one merge with the changes that follow it."""
    live = _live_keys(table, keys, reset)
    if not live.height:
        return changes
    removals = live.with_columns(pl.lit(reset, pl.Int64).alias(COMMIT_TS), pl.lit(True).alias(DELETED))
    return _in_change_order(pl.concat([removals, changes], how="diagonal_relaxed"))


def _versions(changes: pl.DataFrame, keys, columns, table, applied: list[int], resets: list[int]) -> pl.DataFrame:
    """SCD type 2: every version of each key the batch touches (those the target holds and the
    batch's, one per commit ts), a reset closing each key live before it, validity recomputed.
    The batch's own `resets` touch every key the target holds; `applied` ones, the batch's keys."""
    new = changes.select(*columns, pl.col(COMMIT_TS).alias(VALID_FROM), DELETED)
    versions = new
    if table is not None:
        held = pl.DataFrame(table.to_pyarrow_table()).select(*columns, VALID_FROM, DELETED)
        if not resets:
            held = held.join(new.select(keys).unique(), on=keys, how="semi", nulls_equal=True)
        versions = pl.concat([held, new], how="diagonal_relaxed")
    for reset in sorted({*applied, *resets}):
        # A key's last version before the reset: a write over a removal at one ts.
        before = versions.filter(pl.col(VALID_FROM) < reset)
        last = before.sort([VALID_FROM, DELETED], descending=[False, True]).unique(keys, keep="last")
        closing = last.filter(~pl.col(DELETED)).select(keys).with_columns(
            pl.lit(reset, pl.Int64).alias(VALID_FROM), pl.lit(True).alias(DELETED))
        versions = pl.concat([versions, closing], how="diagonal_relaxed")
    # One version per (key, ts): a write over a removal (a key moved within the transaction).
    versions = versions.sort([VALID_FROM, DELETED], descending=[False, True]).unique([*keys, VALID_FROM], keep="last")
    versions = versions.sort([*keys, VALID_FROM])
    next_from = pl.col(VALID_FROM).shift(-1).over(keys)
    return versions.with_columns(
        next_from.alias(VALID_TO),
        (next_from.is_null() & ~pl.col(DELETED)).alias(IS_CURRENT),
    ).select(*columns, VALID_FROM, VALID_TO, IS_CURRENT, DELETED)
