"""PySpark adapter: decode a DataFrame of Kafka messages with `mapInArrow`, replay it to a table.

    events = ticdc_rs.spark.decode(kafka_df, "canal-json")                # envelope layout
    orders = ticdc_rs.spark.decode(kafka_df, "canal-json", layout="typed", table="shop.orders")
    current = ticdc_rs.spark.replay(orders)                               # latest row per key

Every column of the input but `key` and `value` (Kafka's topic, partition, offset, timestamp...)
is carried onto the events as `_topic`, `_partition`, ... unless `carry=` says otherwise.

`decode` takes streaming DataFrames too (`spark.readStream`). Each task of a streaming query
starts a fresh `Decoder`, so the Simple protocol's rows wait for their table's next BOOTSTRAP in
every micro-batch; `table_schemas=` gives the decoders the schemas already seen, and
`table_schemas(events)` collects them from decoded events (see the README's streaming section).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DayTimeIntervalType, StructType

from ticdc_rs import Decoder, UsageError, infer_schema
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
from ticdc_rs._schema import ArrowSchema

INFER_SAMPLE_ROWS = 10_000


def _carry_fields(df: DataFrame, carry, key_column: str, value_column: str) -> list[pa.Field]:
    names = carry if carry is not None else [c for c in df.columns if c not in (key_column, value_column)]
    by_name = {f.name: f for f in df.schema.fields}
    return [pa.field(n, to_arrow_type(by_name[n].dataType, timezone="UTC")) for n in names]


def decode(
    df: DataFrame,
    protocol: str = "auto",
    *,
    carry: Sequence[str] | None = None,
    key_column: str = "key",
    value_column: str = "value",
    **options,
) -> DataFrame:
    """Decoded events of `df`'s messages, one row per event. `options` are `Decoder`'s.

    With `layout="typed"` and no `schema=`, the table's schema is inferred from the first
    `INFER_SAMPLE_ROWS` messages (collected to the driver once), or for a streaming DataFrame,
    which cannot be sampled, from `table_schemas=` (Simple protocol).
    """
    if options.get("layout") == "typed":
        options["schema"] = _typed_schema(df, protocol, options.get("table"), key_column, value_column, options)
    decoder = Decoder(
        protocol,
        carry=_carry_fields(df, carry, key_column, value_column),
        key_column=key_column,
        value_column=value_column,
        **options,
    )
    events = _with_recorded_key(df.mapInArrow(decoder, decoder.schema), decoder)
    if options.get("layout") == "typed":
        _DECODED[events] = (df, decoder)
    return events


def _sample(df: DataFrame, key_column: str, value_column: str) -> pa.Table:
    """The first `INFER_SAMPLE_ROWS` messages, collected to the driver for `infer_schema`."""
    return df.select(*[c for c in (key_column, value_column) if c in df.columns]).limit(INFER_SAMPLE_ROWS).toArrow()


def _typed_schema(df: DataFrame, protocol: str, table: str | None, key_column: str, value_column: str,
                  options: dict, sample: pa.Table | list | None = None):
    """`table`'s typed schema: `schema=`, else inferred from `sample` (taken here when not given)
    or, for a streaming DataFrame, which cannot be sampled, from `table_schemas=` alone."""
    if options.get("schema") is not None:
        return options["schema"]
    if df.isStreaming:
        if not options.get("table_schemas"):
            raise UsageError(
                'a streaming DataFrame cannot be sampled to infer the typed schema: give schema= '
                "(a CREATE TABLE statement or a pyarrow schema), or table_schemas= for the Simple protocol"
            )
        sample = []
    elif sample is None:
        sample = _sample(df, key_column, value_column)
    return infer_schema(sample, protocol, table, compression=options.get("compression", "none"),
                        key_column=key_column, value_column=value_column,
                        table_schemas=options.get("table_schemas", ()))


def _with_recorded_key(events: DataFrame, decoder: Decoder) -> DataFrame:
    """The events with the primary key the decoder's typed schema records, on their first column
    (see `KEY_METADATA`)."""
    keys = recorded_key(pa.schema(decoder.schema).metadata) or []
    return events.withMetadata(keys[0], {KEY_METADATA: keys}) if keys else events


def table_schemas(events: DataFrame, known: Iterable[str] = ()) -> list[str]:
    """The Simple-protocol table schemas of `known`, then those the BOOTSTRAP and DDL rows of
    `events` (envelope layout) carry that `known` lacks: what `decode(..., table_schemas=)`
    takes, so that a streaming query's next micro-batch reads its rows at once."""
    rows = events.where(F.col("_table_schema").isNotNull()).select("_table_schema").distinct().collect()
    return list(dict.fromkeys([*known, *sorted(r[0] for r in rows)]))



# ---------------------------------------------------------------------------------------------
# Replay and apply: the table from its changes (the rules are in `ticdc_rs._changes`; the Polars
# adapter implements the same).

# Spark keeps no schema-level metadata: the primary key rides on its first column's field metadata.
KEY_METADATA = "ticdc_rs.primary_key"


def _recorded_keys(events: DataFrame) -> list[str] | None:
    for f in events.schema.fields:
        if KEY_METADATA in f.metadata:
            return list(f.metadata[KEY_METADATA])
    return None


def _partition_column(events: DataFrame):
    return F.col("_partition") if "_partition" in events.columns else F.lit(0)


def last_watermarks(events: DataFrame, partitions: Iterable[int] = ()) -> dict:
    """Each Kafka partition's last WATERMARK ts: of the partitions the events come from (their
    `_partition`) and of `partitions`; None for one without a WATERMARK yet."""
    is_mark = F.col("_op") == "WATERMARK"
    rows = (events.groupBy(_partition_column(events).alias("p"))
            .agg(F.max(F.when(is_mark, F.col(COMMIT_TS))).alias("ts")).collect())
    last = {r["p"]: r["ts"] for r in rows}
    return {p: last.get(p) for p in dict.fromkeys([*sorted(last), *partitions])}


def snapshot_ts(events: DataFrame, partitions: Iterable[int] = ()) -> int:
    """The TSO of the transactionally consistent snapshot `replay(..., as_of="watermark")` gives:
    the smallest of the partitions' last WATERMARKs."""
    return consistent_ts(last_watermarks(events, partitions))


def _is_reset():
    return (F.col("_op") == "DDL") & F.col("_ddl").rlike(RESET_DDL)


RESET = "__reset"
RESET_BUCKET = "__reset_bucket"
INCOMPLETE_ROW = ("an INSERT/UPDATE event carries only the handle key or a claim-check location: "
                  "decode with claim_check_dir= to read its row")


def _changes(events: DataFrame, keys: list[str], limit: int | None, after, *, resets: bool = False) -> DataFrame:
    """Every change of the events with commit ts in (after, limit]: the table's columns,
    `_commit_ts`, `_deleted` and the order columns; with `resets`, each reset DDL too, as a row
    flagged `__reset`. `after` is an int or a Column.

    One pass over the events: a key-moving UPDATE becomes its two changes by `inline`, not by a
    union that would read (and decode) the events twice."""
    columns = table_columns(events.columns)
    order = [c for c in ORDER_COLUMNS if c in events.columns]
    is_reset = _is_reset()
    rows = events.where(F.col("_op").isin(*ROW_OPS) | is_reset if resets else F.col("_op").isin(*ROW_OPS))
    if limit is not None:
        rows = rows.where(F.col(COMMIT_TS) <= limit)
    if after is not None:
        rows = rows.where(F.col(COMMIT_TS) > after)
    if "_handle_key_only" in events.columns and "_claim_check" in events.columns:
        incomplete = F.col("_op").isin("INSERT", "UPDATE") & (
            F.coalesce(F.col("_handle_key_only"), F.lit(False)) | F.col("_claim_check").isNotNull())
        rows = rows.withColumn(COMMIT_TS, F.when(incomplete, F.raise_error(F.lit(INCOMPLETE_ROW)))
                               .otherwise(F.col(COMMIT_TS)))
    tail = [F.col(c) for c in (COMMIT_TS, *order)] + ([is_reset.alias(RESET)] if resets else [])

    def change(values: list, deleted) -> Column:
        return F.struct(*[v.alias(c) for c, v in zip(columns, values, strict=True)], deleted.alias(DELETED), *tail)

    write = change([F.col(c) for c in columns], F.col("_op") == "DELETE")
    if "_before" not in events.columns:
        return rows.select(F.inline(F.array(write)))
    old = [F.coalesce(F.col("_before").getField(c), F.col(c)) for c in columns]
    moved = F.lit(False)
    for k in keys:
        moved = moved | (old[columns.index(k)] != F.col(k))
    is_move = (F.col("_op") == "UPDATE") & F.col("_before").isNotNull() & moved
    both = F.array(write, change(old, F.lit(True)))
    return rows.select(F.inline(F.when(is_move, both).otherwise(F.array(write))))


def _change_order(changes: DataFrame) -> list[Column]:
    """Greatest first."""
    order = [F.col(COMMIT_TS).desc(), F.col(DELETED).asc()]
    return order + [F.col(c).desc() for c in ORDER_COLUMNS if c in changes.columns]


def _latest(changes: DataFrame, keys: list[str], *group: str) -> DataFrame:
    """The greatest change per key (and `group`) in change order."""
    w = Window.partitionBy(*group, *keys).orderBy(*_change_order(changes))
    return changes.withColumn("__rank", F.row_number().over(w)).where("__rank = 1").drop("__rank")


def replay(events: DataFrame, keys: Sequence[str] | None = None, *, as_of: str | int = "end",
           partitions: Iterable[int] = ()) -> DataFrame:
    """The table the typed `events` of one table build: its rows as of `as_of`.

    `keys` defaults to the primary key of the typed schema (`decode(..., layout="typed")` records
    it). `as_of`: `"end"` (every change), `"watermark"` (the consistent snapshot at
    `snapshot_ts(events, partitions)`, computed with one pass) or a TSO. The same rows as
    `ticdc_rs.polars.replay`; see `ticdc_rs._changes` for the rules.

    The plan reads the events once, shuffles once, sorts once and makes one window pass: changes
    go to buckets by a hash of their key and each reset is copied into every bucket. Sorted by key
    (a reset's key is null, so resets come first; a key is never null) and then in change order,
    greatest first, a row is its key's greatest change when the row before it holds another key,
    and the last reset it must follow is the greatest of the resets before it.

    When `events` is what `decode(..., layout="typed")` returned (not transformed) and Spark's
    cache does not hold it, its Python tasks turn the events into these changes as they decode
    them (`_DecodedChanges`), so that Spark does not copy every change through two `Generate`s
    before the shuffle.
    """
    columns = table_columns(events.columns)
    keys = resolve_keys(keys, _recorded_keys(events), columns)
    check_as_of(as_of)
    limit = None if as_of == "end" else snapshot_ts(events, partitions) if as_of == "watermark" else int(as_of)
    shuffle = int(events.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    buckets = 8 * shuffle  # several per shuffle partition, so that hashing them spreads evenly
    hashed = F.pmod(F.xxhash64(*keys), F.lit(buckets))
    decoded = _DECODED.get(events)
    if decoded is not None and not _in_cache(events):
        messages, decoder = decoded
        prepare = _DecodedChanges(decoder, keys, limit, buckets)
        changes = messages.mapInArrow(prepare, prepare.schema)
        spread = changes.withColumn("__bucket", F.coalesce(F.col(RESET_BUCKET), hashed)).drop(RESET_BUCKET)
    else:
        changes = _changes(events, keys, limit, None, resets=True)
        bucket = F.when(F.col(RESET), F.sequence(F.lit(0), F.lit(buckets - 1))).otherwise(F.array(hashed))
        spread = changes.withColumn("__bucket", F.explode(bucket))
    spread = spread.repartition(shuffle, "__bucket")
    w = Window.partitionBy("__bucket").orderBy(*[F.col(k).asc_nulls_first() for k in keys], *_change_order(changes))
    greatest = F.lag(F.lit(True)).over(w).isNull()
    for k in keys:
        greatest = greatest | ~F.lag(k).over(w).eqNullSafe(F.col(k))
    so_far = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    reset_ts = F.max(F.when(F.col(RESET), F.col(COMMIT_TS))).over(so_far)
    ranked = spread.select(*columns, DELETED, RESET, COMMIT_TS, greatest.alias("__greatest"),
                           reset_ts.alias("__reset_ts"))
    after_reset = F.col("__reset_ts").isNull() | (F.col(COMMIT_TS) > F.col("__reset_ts"))
    return ranked.where(F.col("__greatest") & ~F.col(RESET) & ~F.col(DELETED) & after_reset).select(*columns)


# What `decode(..., layout="typed")` returned, with its messages and decoder (see `replay`).
_DECODED: weakref.WeakKeyDictionary[DataFrame, tuple[DataFrame, Decoder]] = weakref.WeakKeyDictionary()


def _in_cache(events: DataFrame) -> bool:
    """Whether Spark's cache holds `events`, cached through it or through another DataFrame of the
    same plan."""
    manager = events.sparkSession._jsparkSession.sharedState().cacheManager()
    return manager.lookupCachedData(events._jdf).isDefined()


class _DecodedChanges:
    """`mapInArrow`'s function for `replay` of a `decode` result: decodes the messages and yields
    the changes `_changes(..., resets=True)` would make of their events, with each reset once per
    bucket (its number in `__reset_bucket`; null for the other changes). A key-moving UPDATE's
    second change, the old key's removal, carries its key alone: replay reads no other value of a
    removal."""

    def __init__(self, decoder: Decoder, keys: list[str], limit: int | None, buckets: int) -> None:
        self.decoder, self.keys, self.limit, self.buckets = decoder, keys, limit, buckets
        events = decoder.schema.arrow
        self.columns = table_columns(events.names)
        self.order = [c for c in ORDER_COLUMNS if c in events.names]
        self.schema = ArrowSchema(pa.schema([
            *[events.field(c).with_nullable(True) for c in self.columns],
            pa.field(DELETED, pa.bool_()),
            events.field(COMMIT_TS),
            *[events.field(c) for c in self.order],
            pa.field(RESET, pa.bool_()),
            pa.field(RESET_BUCKET, pa.int32()),
        ]))

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for events in self.decoder(batches):
            yield from self._changes(events)

    def _changes(self, events: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        if self.limit is not None:
            events = events.filter(pc.less_equal(events.column(COMMIT_TS), self.limit))
        op = events.column("_op")
        rows = events.filter(pc.is_in(op, pa.array(ROW_OPS)))
        if rows.num_rows:
            self._check_complete(rows)
            deleted = pc.equal(rows.column("_op"), "DELETE")
            yield self._batch(rows, [rows.column(c) for c in self.columns], deleted)
            removals = self._removals(rows)
            if removals is not None:
                yield removals
        ddl = events.filter(pc.equal(op, "DDL"))
        resets = [i for i, text in enumerate(ddl.column("_ddl").to_pylist()) if text and re.search(RESET_DDL, text)]
        if resets:
            copies = ddl.take(pa.array([i for i in resets for _ in range(self.buckets)]))
            none = [pa.nulls(copies.num_rows, self.schema.field(c).type) for c in self.columns]
            buckets = pa.array(list(range(self.buckets)) * len(resets), pa.int32())
            yield self._batch(copies, none, pa.repeat(False, copies.num_rows), reset_buckets=buckets)

    def _check_complete(self, rows: pa.RecordBatch) -> None:
        names = rows.schema.names
        if "_handle_key_only" not in names or "_claim_check" not in names:
            return
        incomplete = pc.and_(pc.is_in(rows.column("_op"), pa.array(["INSERT", "UPDATE"])),
                             pc.or_(pc.fill_null(rows.column("_handle_key_only"), False),
                                    pc.is_valid(rows.column("_claim_check"))))
        if pc.any(incomplete).as_py():
            raise ReplayError(INCOMPLETE_ROW)

    def _removals(self, rows: pa.RecordBatch) -> pa.RecordBatch | None:
        """The removals of the old keys of the key-moving UPDATEs of `rows`."""
        if "_before" not in rows.schema.names:
            return None
        before = rows.column("_before")
        old = {k: pc.coalesce(pc.struct_field(before, k), rows.column(k)) for k in self.keys}
        moved = pc.not_equal(old[self.keys[0]], rows.column(self.keys[0]))
        for k in self.keys[1:]:
            moved = pc.or_(moved, pc.not_equal(old[k], rows.column(k)))
        is_move = pc.and_(pc.and_(pc.equal(rows.column("_op"), "UPDATE"), pc.is_valid(before)), moved)
        at = pc.indices_nonzero(pc.fill_null(is_move, False))
        if not len(at):
            return None
        moves = rows.take(at)
        values = [old[c].take(at) if c in old else pa.nulls(len(at), self.schema.field(c).type)
                  for c in self.columns]
        return self._batch(moves, values, pa.repeat(True, len(at)))

    def _batch(self, events: pa.RecordBatch, values: list, deleted, *, reset_buckets=None) -> pa.RecordBatch:
        """Changes of `events` with `values` for the table's columns; resets when `reset_buckets`
        numbers their buckets."""
        n = events.num_rows
        is_reset = reset_buckets is not None
        return pa.RecordBatch.from_arrays(
            [*values, deleted, events.column(COMMIT_TS), *[events.column(c) for c in self.order],
             pa.repeat(is_reset, n), reset_buckets if is_reset else pa.nulls(n, pa.int32())],
            schema=self.schema.arrow)


def replay_tables(df: DataFrame, protocol: str = "auto", *, tables: Sequence[str] | None = None,
                  as_of: str | int = "end", **options) -> dict[str, DataFrame]:
    """Every table of a multi-table topic replayed: `{"db.table": rows}`. Unless `tables=` names
    them, `df` (Kafka messages) is first decoded in the envelope layout to find the tables; then
    `decode_tables` decodes every table in one pass: cache `df` when it is costly to read again."""
    if tables is None:
        events = decode(df, protocol, carry=[], **{k: v for k, v in options.items() if k != "schema"})
        rows = (events.where(F.col("_op").isin(*ROW_OPS)).select(F.concat_ws(".", "_schema", "_table").alias("name"))
                .distinct().collect())
        tables = sorted(r["name"] for r in rows)
    decoded = decode_tables(df, protocol, tables, **options)
    return {name: replay(events, as_of=as_of) for name, events in decoded.items()}


TABLE_INDEX = "__table"


class _TableDecoders:
    """`mapInArrow`'s function for `decode_tables`: each batch goes through one typed `Decoder`
    per table (each skips the other tables' messages cheaply); the events of table i come out in
    struct column `__t{i}` beside `__table` = i."""

    def __init__(self, decoders: list[Decoder]) -> None:
        self.decoders = decoders
        self.structs = [pa.struct(list(pa.schema(d.schema))) for d in decoders]
        fields = [pa.field(f"__t{i}", struct) for i, struct in enumerate(self.structs)]
        self.schema = ArrowSchema(pa.schema([pa.field(TABLE_INDEX, pa.int32(), nullable=False), *fields]))

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i, decoder in enumerate(self.decoders):
                yield self._widened(i, decoder.decode(batch))
        for i, decoder in enumerate(self.decoders):
            tail = decoder.flush()
            if tail.num_rows:
                yield self._widened(i, tail)

    def _widened(self, i: int, events: pa.RecordBatch) -> pa.RecordBatch:
        n = events.num_rows
        columns = [pa.nulls(n, struct) for struct in self.structs]
        columns[i] = pa.StructArray.from_arrays(events.columns, fields=list(self.structs[i]))
        return pa.RecordBatch.from_arrays([pa.array([i] * n, pa.int32()), *columns], schema=self.schema.arrow)


def decode_tables(df: DataFrame, protocol: str, tables: Sequence[str], *, carry: Sequence[str] | None = None,
                  key_column: str = "key", value_column: str = "value", **options) -> dict[str, DataFrame]:
    """The typed events of each of `tables` ("db.table"), `{"db.table": events}`, as `decode(df,
    protocol, layout="typed", table=name, ...)` gives them, but decoded in one pass over `df`,
    held in Spark's cache (`.unpersist()` any of them to free it; a streaming `df` is not cached).
    Their columns are all nullable. `schema=` applies to every table; without it each table's
    schema is inferred from one sample of the messages (or from `table_schemas=` when streaming)."""
    sample = None if options.get("schema") is not None or df.isStreaming else _sample(df, key_column, value_column)
    carried = _carry_fields(df, carry, key_column, value_column)
    decoders = []
    for name in tables:
        schema = _typed_schema(df, protocol, name, key_column, value_column, options, sample)
        decoders.append(Decoder(protocol, carry=carried, key_column=key_column, value_column=value_column,
                                **{**options, "layout": "typed", "table": name, "schema": schema}))
    wide = _TableDecoders(decoders)
    events = df.mapInArrow(wide, wide.schema)
    if not df.isStreaming:  # (a streaming query decodes each micro-batch once per table instead)
        events = events.persist()
    return {name: _with_recorded_key(events.where(F.col(TABLE_INDEX) == i).select(f"__t{i}.*"), decoder)
            for i, (name, decoder) in enumerate(zip(tables, decoders, strict=True))}


def _is_path(target: str) -> bool:
    return "/" in target or ":" in target


def _delta(spark, target: str):
    from delta.tables import DeltaTable

    if _is_path(target):
        return DeltaTable.forPath(spark, target) if DeltaTable.isDeltaTable(spark, target) else None
    return DeltaTable.forName(spark, target) if spark.catalog.tableExists(target) else None


def _state(table) -> tuple[ApplyState, int]:
    """The state the table's newest commits record, and the table's version."""
    rows = table.history(100).select("version", "userMetadata").collect()
    return ApplyState.from_history(r["userMetadata"] for r in rows), rows[0]["version"]


def _sql_name(target: str) -> str:
    return "delta." + _quoted(target) if _is_path(target) else target


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def apply(events: DataFrame, target: str, keys: Sequence[str] | None = None, *, history: bool = False,
          batch_id: int | None = None, app_id: str = "ticdc_rs") -> int | None:
    """MERGE the typed `events` of one table into the Delta table `target` (a path, or a table
    name), created when absent; return the TSO up to which it is complete and consistent (None
    before the first WATERMARK). Ready for `foreachBatch`:

        query = events.writeStream.foreachBatch(
            lambda batch, batch_id: ticdc_rs.spark.apply(batch, "/lake/orders", batch_id=batch_id)).start()

    The same table, columns and guarantees as `ticdc_rs.polars.apply`: idempotent per key,
    tombstones in `_deleted`, `history=True` for SCD type 2. With `batch_id`, the commit carries
    Delta's idempotent-write transaction (`app_id`, `batch_id`): Delta skips a batch it has
    committed (a micro-batch re-run after a failure). Give each query writing one target its own
    `app_id`.
    """
    import delta.tables  # noqa: F401  (fails here, before any work, when delta-spark is missing)

    spark = events.sparkSession
    columns = table_columns(events.columns)
    keys = resolve_keys(keys, _recorded_keys(events), columns)
    events = _time_as_micros(events).persist()
    try:
        table = _delta(spark, target)
        state, version = _state(table) if table is not None else (ApplyState(), None)
        facts = (events.where((F.col("_op") == "WATERMARK") | _is_reset())
                 .groupBy(_partition_column(events).alias("p"), "_op")
                 .agg(F.max(COMMIT_TS).alias("last"), F.collect_set(COMMIT_TS).alias("all")).collect())
        marks = {r["p"]: r["last"] for r in facts if r["_op"] == "WATERMARK"}
        resets = sorted({ts for r in facts if r["_op"] == "DDL" for ts in r["all"]} - set(state.resets))
        new_state = state.advance(resets, marks)
        if history:
            source = _versions(_changes(events, keys, None, None), keys, columns, table, state.resets, resets)
            on, update = [*keys, VALID_FROM], None
        else:
            changes = _changes(events, keys, None, new_state.reset_ts)
            if resets and resets[-1] == new_state.reset_ts and table is not None:
                live = (table.toDF().where(~F.col(DELETED) & (F.col(COMMIT_TS) < resets[-1])).select(*keys)
                        .withColumn(COMMIT_TS, F.lit(resets[-1])).withColumn(DELETED, F.lit(True)))
                changes = changes.unionByName(live, allowMissingColumns=True)
            # A tombstone holds its key alone, as in the Polars adapter.
            values = [F.when(~F.col(DELETED), F.col(c)).alias(c) if c not in keys else F.col(c) for c in columns]
            source = _latest(changes, keys).select(*values, COMMIT_TS, DELETED)
            on = keys
            update = (f"s.{COMMIT_TS} > t.{COMMIT_TS} OR (s.{COMMIT_TS} = t.{COMMIT_TS} "
                      f"AND t.{DELETED} AND NOT s.{DELETED})")
        conf = {"spark.databricks.delta.commitInfo.userMetadata": new_state.to_metadata()}
        if batch_id is not None:
            conf |= {"spark.databricks.delta.write.txnAppId": app_id,
                     "spark.databricks.delta.write.txnVersion": str(batch_id)}
        with _session_conf(spark, conf):
            if table is None:  # the first micro-batch creates the table: no MERGE needed
                writer = source.write.format("delta")
                writer.save(target) if _is_path(target) else writer.saveAsTable(target)
            else:
                predicate = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in on)
                (table.alias("t").merge(source.alias("s"), predicate)
                 .whenMatchedUpdateAll(condition=update).whenNotMatchedInsertAll()
                 .withSchemaEvolution().execute())
                if new_state != state and table.history(1).first()["version"] == version:
                    # Delta commits no MERGE that changes no row (watermarks alone, late changes):
                    # the new state gets a commit of its own.
                    spark.sql(f"ALTER TABLE {_sql_name(target)} SET TBLPROPERTIES "
                              f"('ticdc_rs.state' = '{new_state.to_metadata()}')")
        return new_state.resolved_ts
    finally:
        events.unpersist()


def _time_as_micros(events: DataFrame) -> DataFrame:
    """MySQL TIME columns (day-time intervals) as their microseconds, a bigint, also in
    `_before`, as in the Polars adapter: Delta has no type for a TIME."""
    def micros(c: Column) -> Column:
        # Spark casts only single-unit intervals to numbers: add up the fields (each signed).
        whole = F.lit(0).cast("bigint")
        for unit, scale in (("DAY", 86_400), ("HOUR", 3_600), ("MINUTE", 60)):
            whole = whole + F.extract(F.lit(unit), c).cast("bigint") * scale
        return whole * 1_000_000 + (F.extract(F.lit("SECOND"), c) * 1_000_000).cast("bigint")

    times = {f.name: micros(F.col(f.name)) for f in events.schema if isinstance(f.dataType, DayTimeIntervalType)}
    before = events.schema["_before"].dataType if "_before" in events.columns else None
    if isinstance(before, StructType):
        old = [f.name for f in before if isinstance(f.dataType, DayTimeIntervalType)]
        if old:
            image = F.col("_before")
            for name in old:
                image = image.withField(name, micros(F.col("_before").getField(name)))
            times["_before"] = image
    return events.withColumns(times) if times else events


class _session_conf:
    """SQL confs set for the duration of a block, then restored."""

    def __init__(self, spark, conf: dict[str, str]):
        self.spark, self.conf = spark, conf
        self.saved: dict[str, str | None] = {}

    def __enter__(self):
        for k, v in self.conf.items():
            self.saved[k] = self.spark.conf.get(k, None)
            self.spark.conf.set(k, v)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)


def _versions(changes: DataFrame, keys, columns, table, applied: list[int], resets: list[int]) -> DataFrame:
    """SCD type 2, as `ticdc_rs.polars._versions`: every version of each key the batch touches,
    a reset closing each key live before it, validity recomputed."""
    new = changes.select(*columns, F.col(COMMIT_TS).alias(VALID_FROM), DELETED)
    versions = new
    if table is not None:
        held = table.toDF().select(*columns, VALID_FROM, DELETED)
        if not resets:
            held = held.join(new.select(*keys).distinct(), on=keys, how="left_semi")
        versions = held.unionByName(new)
    by_key = Window.partitionBy(*[F.col(k) for k in keys])
    for reset in sorted({*applied, *resets}):
        before = versions.where(F.col(VALID_FROM) < reset)
        # A key's last version before the reset: a write over a removal at one ts.
        newest = by_key.orderBy(F.col(VALID_FROM).desc(), F.col(DELETED).asc())
        last = before.withColumn("__rank", F.row_number().over(newest))
        closing = (last.where((F.col("__rank") == 1) & ~F.col(DELETED)).select(*keys)
                   .withColumn(VALID_FROM, F.lit(reset)).withColumn(DELETED, F.lit(True)))
        versions = versions.unionByName(closing, allowMissingColumns=True)
    one = Window.partitionBy(*[F.col(k) for k in keys], F.col(VALID_FROM)).orderBy(F.col(DELETED).asc())
    versions = versions.withColumn("__rank", F.row_number().over(one)).where("__rank = 1").drop("__rank")
    next_from = F.lead(VALID_FROM).over(by_key.orderBy(VALID_FROM))
    return (versions.withColumn(VALID_TO, next_from)
            .withColumn(IS_CURRENT, F.col(VALID_TO).isNull() & ~F.col(DELETED))
            .select(*columns, VALID_FROM, VALID_TO, IS_CURRENT, DELETED))
