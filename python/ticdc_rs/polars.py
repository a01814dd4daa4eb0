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

from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ticdc_rs import Decoder, _as_schema, infer_schema


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
    frames = [pl.DataFrame(o) for o in _events(decoder, batches)]
    if not frames:
        return pl.DataFrame(schema=pl.DataFrame(pa.schema(decoder.schema).empty_table()).schema)
    return pl.concat(frames, how="vertical", rechunk=False)


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


def replay(events: pl.DataFrame, keys: Sequence[str], order: Sequence[str] | None = None) -> pl.DataFrame:
    """The table's current state from typed events: the last change per key, deletes removed.

    Changes are applied in commit-ts order, then `_partition`, `_offset`, `_message` where present.
    """
    if not keys:
        raise ValueError("replay needs keys= (the table's primary key columns)")
    if order is None:
        order = ["_commit_ts"] + [c for c in ("_partition", "_offset", "_message") if c in events.columns]
    rows = events.filter(pl.col("_op").is_in(["INSERT", "UPDATE", "DELETE"])).sort(order, maintain_order=True)
    latest = rows.group_by(list(keys), maintain_order=True).last()
    table_columns = [c for c in events.columns if not c.startswith("_")]
    return latest.filter(pl.col("_op") != "DELETE").select(table_columns)
