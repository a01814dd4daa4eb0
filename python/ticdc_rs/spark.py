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

import json
from typing import Iterable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type

from ticdc_rs import Decoder, UsageError, infer_schema

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
    if options.get("layout") == "typed" and options.get("schema") is None and df.isStreaming:
        if not options.get("table_schemas"):
            raise UsageError(
                'a streaming DataFrame cannot be sampled to infer the typed schema: give schema= '
                "(a CREATE TABLE statement or a pyarrow schema), or table_schemas= for the Simple protocol"
            )
        options["schema"] = infer_schema([], protocol, options.get("table"), table_schemas=options["table_schemas"])
    if options.get("layout") == "typed" and options.get("schema") is None:
        sample = df.select(*[c for c in (key_column, value_column) if c in df.columns]).limit(INFER_SAMPLE_ROWS)
        options["schema"] = infer_schema(
            sample.toArrow(),
            protocol,
            options.get("table"),
            compression=options.get("compression", "none"),
            key_column=key_column,
            value_column=value_column,
            table_schemas=options.get("table_schemas", ()),
        )
    decoder = Decoder(
        protocol,
        carry=_carry_fields(df, carry, key_column, value_column),
        key_column=key_column,
        value_column=value_column,
        **options,
    )
    return df.mapInArrow(decoder, decoder.schema)


def table_schemas(events: DataFrame, known: Iterable[str] = ()) -> list[str]:
    """The Simple-protocol table schemas of `known`, then those the BOOTSTRAP and DDL rows of
    `events` (envelope layout) carry that `known` lacks: what `decode(..., table_schemas=)`
    takes, so that a streaming query's next micro-batch reads its rows at once."""
    rows = events.where(F.col("_table_schema").isNotNull()).select("_table_schema").distinct().collect()
    return list(dict.fromkeys([*known, *sorted(r[0] for r in rows)]))


def _primary_key(df: DataFrame, keys: Sequence[str] | None) -> list[str]:
    if keys:
        return list(keys)
    raise ValueError("replay needs keys= (the table's primary key columns)")


def replay(events: DataFrame, keys: Sequence[str], order: Sequence[str] | None = None) -> DataFrame:
    """The table's current state from typed events: the last change per key, deletes removed.

    Changes are ordered by commit ts, then by `_partition`/`_offset`/`_message` where present.
    """
    keys = _primary_key(events, keys)
    if order is None:
        order = ["_commit_ts"] + [c for c in ("_partition", "_offset", "_message") if c in events.columns]
    rows = events.where(F.col("_op").isin("INSERT", "UPDATE", "DELETE"))
    w = Window.partitionBy(*[F.col(k) for k in keys]).orderBy(*[F.col(c).desc() for c in order])
    meta = [c for c in events.columns if c.startswith("_")]
    latest = rows.withColumn("__rank", F.row_number().over(w)).where("__rank = 1")
    return latest.where(F.col("_op") != "DELETE").drop("__rank", *meta)
