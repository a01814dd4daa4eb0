"""TiCDC change streams to Apache Arrow, for Spark and Polars.

    df.mapInArrow(ticdc_rs.decode, ticdc_rs.ENVELOPE_SCHEMA)

decodes Kafka `key`/`value` bytes written by TiCDC (protocol detected per message) into the
envelope layout. `Decoder` gives every option (a typed layout for one table, the error policy,
compression, claim-check files, carried columns); `ticdc_rs.spark` and `ticdc_rs.polars` wrap it
for those engines. All decoding happens in Rust; Arrow crosses over through the C Data Interface.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from ticdc_rs._changes import ReplayError
from ticdc_rs._schema import ArrowSchema
from ticdc_rs._ticdc_rs import DecodeError, EncodeError, NativeDecoder, NativeEncoder, UsageError, __version__
from ticdc_rs._ticdc_rs import infer_schema as _infer_schema
from ticdc_rs._ticdc_rs import schema_from_ddl as _schema_from_ddl
from ticdc_rs._ticdc_rs import schema_from_table_schema as _schema_from_table_schema

__all__ = [
    "ReplayError",
    "ArrowSchema",
    "DecodeError",
    "Decoder",
    "EncodeError",
    "Encoder",
    "ENVELOPE_SCHEMA",
    "PROTOCOLS",
    "decode",
    "infer_schema",
    "schema_for",
    "schema_from_ddl",
    "schema_from_table_schema",
    "UsageError",
    "__version__",
]

PROTOCOLS = ("open", "craft", "canal-json", "simple-json", "simple-avro")

# Types of the Kafka source's columns, for `carry=` given by name.
KAFKA_COLUMN_TYPES = {
    "key": pa.binary(),
    "value": pa.binary(),
    "topic": pa.string(),
    "partition": pa.int32(),
    "offset": pa.int64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestampType": pa.int32(),
}


def _carry_fields(carry: Iterable[str | pa.Field]) -> list[pa.Field]:
    if isinstance(carry, (str, pa.Field)):
        carry = [carry]
    fields = []
    for c in carry:
        if isinstance(c, pa.Field):
            fields.append(c)
        elif not isinstance(c, str):
            raise TypeError(f"carry= takes column names or pyarrow.Field objects, not {type(c).__name__}")
        elif c in KAFKA_COLUMN_TYPES:
            fields.append(pa.field(c, KAFKA_COLUMN_TYPES[c]))
        else:
            raise UsageError(
                f"carry column {c!r} is not one of the Kafka source's columns "
                f"({', '.join(KAFKA_COLUMN_TYPES)}): give its type as a pyarrow.Field"
            )
    return fields


def _as_schema(schema) -> pa.Schema | None:
    if schema is None or isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, ArrowSchema):
        return schema.arrow
    if isinstance(schema, str):
        if schema.lstrip().startswith("{"):
            return schema_from_table_schema(schema)
        return schema_from_ddl(schema)
    if hasattr(schema, "__arrow_c_schema__"):
        return pa.schema(schema)
    raise TypeError(
        "schema= takes a pyarrow.Schema (or an object with __arrow_c_schema__), a CREATE TABLE "
        f"statement or a Simple-protocol table schema JSON text, not {type(schema).__name__}"
    )


def _check_protocol(protocol: object, allowed: Sequence[str]) -> None:
    if not isinstance(protocol, str):
        raise TypeError(f"protocol must be a str, not {type(protocol).__name__}")
    if protocol not in allowed:
        raise UsageError(f"unknown protocol {protocol!r}; expected one of {', '.join(map(repr, allowed))}")


def _as_batch(batch, what: str):
    """`batch` itself when Arrow can import it as a record batch; a pyarrow.Table as one batch."""
    if isinstance(batch, pa.Table):
        chunks = batch.combine_chunks().to_batches()
        return chunks[0] if chunks else pa.RecordBatch.from_pylist([], schema=batch.schema)
    if isinstance(batch, pa.RecordBatch) or hasattr(batch, "__arrow_c_array__"):
        return batch
    raise TypeError(f"{what} must be a pyarrow.RecordBatch (or have __arrow_c_array__), not {type(batch).__name__}")


def _batches(batches, who: str) -> Iterator:
    """An iterator over `batches`, refusing what cannot be one: a single batch or table (whose
    iteration would yield its columns), a non-iterable, a closed or exhausted generator."""
    if isinstance(batches, (pa.RecordBatch, pa.Table)):
        raise TypeError(
            f"{who} takes an iterator of record batches (mapInArrow's), not one {type(batches).__name__}; "
            "wrap it in a list, or call Decoder.decode(batch)"
        )
    if inspect.isgenerator(batches) and inspect.getgeneratorstate(batches) == inspect.GEN_CLOSED:
        raise UsageError(f"{who} was handed a generator that is already closed or exhausted")
    try:
        return iter(batches)
    except TypeError:
        raise TypeError(f"{who} takes an iterator of record batches, not {type(batches).__name__}") from None


def _table_schema_texts(texts: Iterable[str | None]) -> list[str]:
    """Distinct texts in order of first appearance; nulls (rows without one) left out."""
    if isinstance(texts, str):
        raise TypeError("table_schemas= takes a list of table schema texts, not one text")
    return list(dict.fromkeys(t for t in texts if t is not None))


def schema_from_ddl(sql: str) -> pa.Schema:
    """The typed-layout schema of a `CREATE TABLE` statement (MySQL/TiDB dialect): exact
    DECIMAL(p, s), ENUM/SET members (so indexes become names), unsigned widening, BIT widths,
    TiDB VECTOR; the primary key in the schema metadata (`primary_key`)."""
    return pa.schema(_schema_from_ddl(sql))


def schema_from_table_schema(text: str) -> pa.Schema:
    """The typed-layout schema of a Simple-protocol table schema: the `tableSchema` JSON that
    BOOTSTRAP and DDL messages carry and the envelope's `_table_schema` column holds."""
    return pa.schema(_schema_from_table_schema(text))


class Decoder:
    """Decodes batches of Kafka messages of one protocol into Arrow batches of events.

    An instance is a `mapInArrow` function (`df.mapInArrow(dec, dec.schema)`) and pickles by its
    options, so Spark can ship it to executors; state (such as counters) lives per process.
    """

    def __init__(
        self,
        protocol: str = "auto",
        *,
        layout: str = "envelope",
        table: str | None = None,
        schema=None,
        on_error: str = "raise",
        compression: str = "none",
        claim_check_dir: str | None = None,
        timezone: str = "UTC",
        key_column: str = "key",
        value_column: str = "value",
        carry: Sequence[str | pa.Field] = (),
        verify_checksum: bool = False,
        max_pending: int = 100_000,
        table_schemas: Iterable[str | None] = (),
    ) -> None:
        _check_protocol(protocol, PROTOCOLS + ("auto",))
        if table is not None and not isinstance(table, str):
            raise TypeError(f'table= must be a str ("db.table"), not {type(table).__name__}')
        self._options: dict[str, Any] = dict(
            protocol=protocol,
            layout=layout,
            table=table,
            schema=_as_schema(schema),
            on_error=on_error,
            compression=compression,
            claim_check_dir=None if claim_check_dir is None else str(claim_check_dir),
            timezone=timezone,
            key_column=key_column,
            value_column=value_column,
            carry=_carry_fields(carry),
            verify_checksum=verify_checksum,
            max_pending=max_pending,
            table_schemas=_table_schema_texts(table_schemas),
        )
        self._native = NativeDecoder(**self._options)
        self.schema = ArrowSchema(pa.schema(self._native.schema))

    def __getstate__(self):
        return self._options

    def __setstate__(self, options):
        self._options = options
        self._native = NativeDecoder(**options)
        self.schema = ArrowSchema(pa.schema(self._native.schema))

    @property
    def protocol(self) -> str:
        return self._options["protocol"]

    @property
    def stats(self) -> dict[str, int]:
        """Counters since this decoder was made: messages, events, errors, filtered, ..."""
        return self._native.stats

    def decode(self, batch) -> pa.RecordBatch:
        """One batch of messages in (anything with `__arrow_c_array__`), one batch of events out."""
        return pa.record_batch(self._native.decode(_as_batch(batch, "the batch to decode")))

    def decode_native(self, batch):
        """Like `decode`, but returns the Arrow PyCapsule object without going through pyarrow."""
        return self._native.decode(_as_batch(batch, "the batch to decode"))

    def flush(self) -> pa.RecordBatch:
        """End of stream: Simple-protocol rows still waiting for their table's schema become
        errors per `on_error` (ERROR rows with "collect"). `__call__` does this by itself."""
        return pa.record_batch(self._native.flush())

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """`mapInArrow`'s function: the events of each batch of `batches`, then those of the
        messages still held at their end. Refuses at once what is not an iterator of batches."""
        return self._decode_all(_batches(batches, "decode"))

    def _decode_all(self, batches: Iterator) -> Iterator[pa.RecordBatch]:
        for i, batch in enumerate(batches):
            yield self.decode(_as_batch(batch, f"item {i} of the iterator"))
        tail = self.flush()
        if tail.num_rows:
            yield tail


def schema_for(protocol: str = "auto", **options) -> ArrowSchema:
    """The output schema a `Decoder` with these options yields."""
    return Decoder(protocol, **options).schema


ENVELOPE_SCHEMA: ArrowSchema = schema_for()


def decode(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`mapInArrow`-ready: envelope layout, protocol detected per message, errors raised."""
    return Decoder()(batches)


def infer_schema(
    batches,
    protocol: str = "auto",
    table: str | None = None,
    *,
    compression: str = "none",
    key_column: str = "key",
    value_column: str = "value",
    table_schemas: Iterable[str | None] = (),
) -> pa.Schema:
    """The typed schema of `table` ("db.tbl") read off a sample of messages, or off the newest
    of `table_schemas` (Simple-protocol table schemas, as `Decoder` takes them) when the sample
    brings no definition of the table."""
    if table is None:
        raise UsageError('infer_schema needs table="db.table"')
    if not isinstance(table, str):
        raise TypeError(f'table= must be a str ("db.table"), not {type(table).__name__}')
    if not isinstance(protocol, str):
        raise TypeError(f"protocol must be a str, not {type(protocol).__name__}")
    if isinstance(batches, (pa.RecordBatch, pa.Table)):
        batches = [batches]
    flat = []
    for i, b in enumerate(_batches(batches, "infer_schema")):
        if isinstance(b, pa.Table):
            flat.extend(b.to_batches())
        else:
            flat.append(_as_batch(b, f"item {i} of the batches"))
    texts = _table_schema_texts(table_schemas)
    native = _infer_schema(flat, protocol, table, compression, key_column, value_column, texts)
    return pa.schema(native)


def _option_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Encoder:
    """Arrow rows of events (either layout) to TiCDC Kafka messages: `key`, `value` binary.

    Options are TiCDC's sink option names in snake case, with TiCDC's defaults:
    `enable_tidb_extension`, `output_old_value`, `content_compatible`,
    `only_output_updated_columns`, `delete_only_output_handle_key_columns`, `compression`,
    `max_message_bytes`, `max_batch_size`, `large_message_handle_option`, `claim_check_dir`,
    `claim_check_raw_value`, `enable_row_checksum`, `send_bootstrap_in_msg_count`,
    `send_bootstrap_interval_in_sec`, `send_bootstrap`, `timezone`, `output_row_key` (Canal-JSON
    `_tidb.rowkey` from `_row_key`), `simple_include_start_ts` (Simple JSON `startTs` from
    `_start_ts`); and `build_ts`, the Simple protocol's `buildTs` in ms (TiCDC writes the wall
    clock; fixing it makes output reproducible). An unknown option name or a bad value raises
    `UsageError`.
    An instance is also a `mapInArrow` function (`df.mapInArrow(enc, enc.schema)`).
    A row that cannot be encoded raises `EncodeError`, whose `row` is its index in the batch.

    Input carrying Kafka's placement (`_partition`, `_topic`, as decoders carry them) is encoded
    per destination, as TiCDC's Kafka sink does: no message mixes partitions, each partition's
    rows keep their order, and the output gains `topic` (string) / `partition` (int32) columns,
    the ones Spark's Kafka sink reads. `schema_for(input_schema)` gives that output's schema.
    """

    def __init__(self, protocol: str, **options) -> None:
        _check_protocol(protocol, PROTOCOLS)
        self._protocol = protocol
        self._options = options
        self._native = NativeEncoder(protocol, [(k, _option_text(v)) for k, v in options.items()])
        self.schema = ArrowSchema(pa.schema(self._native.schema))

    def __getstate__(self):
        return (self._protocol, self._options)

    def __setstate__(self, state):
        self.__init__(state[0], **state[1])

    @property
    def protocol(self) -> str:
        return self._protocol

    def schema_for(self, input_schema) -> ArrowSchema:
        """The output schema for input of `input_schema` (a `pyarrow.Schema`, a Spark
        `StructType` or a list of column names): `key`, `value`, then `topic` if the input has
        `_topic` and `partition` if it has `_partition`. For
        `df.mapInArrow(enc, enc.schema_for(df.schema))`."""
        names = set(getattr(input_schema, "names", None) or input_schema)
        fields = list(self.schema.arrow)
        if "_topic" in names:
            fields.append(pa.field("topic", pa.string()))
        if "_partition" in names:
            fields.append(pa.field("partition", pa.int32()))
        return ArrowSchema(pa.schema(fields))

    def encode(self, batch) -> pa.RecordBatch:
        """One batch of events in (anything with `__arrow_c_array__`), one batch of records out."""
        return pa.record_batch(self._native.encode(_as_batch(batch, "the batch to encode")))

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return self._encode_all(_batches(batches, "encode"))

    def _encode_all(self, batches: Iterator) -> Iterator[pa.RecordBatch]:
        for i, batch in enumerate(batches):
            yield self.encode(_as_batch(batch, f"item {i} of the iterator"))
