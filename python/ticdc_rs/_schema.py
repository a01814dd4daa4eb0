"""Output schemas that both Spark and Arrow understand.

`DataFrame.mapInArrow(func, schema)` takes a Spark `StructType` or a DDL string, not a pyarrow
schema, while Arrow and Polars users want a `pyarrow.Schema`. `ArrowSchema` is both: a `str`
holding the Spark DDL of the schema (so it can be passed straight to `mapInArrow`) that also
speaks the Arrow PyCapsule protocol and hands out the `pyarrow.Schema` as `.arrow`.
"""

from __future__ import annotations

import pyarrow as pa


class ArrowSchema(str):
    """An Arrow schema, usable where Spark wants a DDL string and where Arrow wants a schema."""

    arrow: pa.Schema

    def __new__(cls, schema: pa.Schema) -> ArrowSchema:
        self = super().__new__(cls, spark_ddl(schema))
        self.arrow = schema
        return self

    def __arrow_c_schema__(self):
        return self.arrow.__arrow_c_schema__()

    @property
    def names(self) -> list[str]:
        return self.arrow.names

    def field(self, name: str) -> pa.Field:
        return self.arrow.field(name)

    def __getnewargs__(self):
        return (self.arrow,)

    def __repr__(self) -> str:
        return f"ArrowSchema({self.arrow!r})"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_type(t: pa.DataType) -> str:
    """The Spark SQL type that `mapInArrow` matches against Arrow type `t`."""
    simple = {
        pa.bool_(): "BOOLEAN",
        pa.int8(): "TINYINT",
        pa.int16(): "SMALLINT",
        pa.int32(): "INT",
        pa.int64(): "BIGINT",
        pa.float32(): "FLOAT",
        pa.float64(): "DOUBLE",
        pa.date32(): "DATE",
        pa.string(): "STRING",
        pa.large_string(): "STRING",
        pa.binary(): "BINARY",
        pa.large_binary(): "BINARY",
    }
    if t in simple:
        return simple[t]
    if pa.types.is_string_view(t):
        return "STRING"
    if pa.types.is_binary_view(t):
        return "BINARY"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz is not None else "TIMESTAMP_NTZ"
    if pa.types.is_duration(t):
        return "INTERVAL DAY TO SECOND"
    if pa.types.is_map(t):
        return f"MAP<{spark_type(t.key_type)}, {spark_type(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"ARRAY<{spark_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return f"STRUCT<{_fields_ddl(t, sep=': ')}>"
    raise TypeError(f"no Spark type for Arrow type {t}")


def _fields_ddl(fields, sep: str = " ") -> str:
    parts = []
    for f in fields:
        null = "" if f.nullable else " NOT NULL"
        parts.append(f"{_quote(f.name)}{sep}{spark_type(f.type)}{null}")
    return ", ".join(parts)


def spark_ddl(schema: pa.Schema) -> str:
    """Spark DDL for `schema`, with nullability, for `mapInArrow`'s strict schema check."""
    return _fields_ddl(schema)
