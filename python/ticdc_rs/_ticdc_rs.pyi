"""Type stubs for the private native module. Use the public `ticdc_rs` package instead."""

from collections.abc import Sequence
from os import PathLike
from typing import Any, Self, final

__all__ = [
    "DecodeError",
    "EncodeError",
    "NativeDecoder",
    "NativeEncoder",
    "UsageError",
    "infer_schema",
    "schema_from_ddl",
    "schema_from_table_schema",
    "__version__",
]

__version__: str

class DecodeError(ValueError):
    protocol: str
    message_index: int
    offset: int
    reason: str

class EncodeError(ValueError):
    protocol: str
    row: int | None
    reason: str

class UsageError(ValueError):
    """The call is wrong as a whole: an unknown option or option value, or an input batch
    without the columns it needs or with columns of the wrong type."""

@final
class NativeDecoder:
    def __new__(
        cls,
        protocol: str | None,
        layout: str,
        table: str | None,
        schema: Any | None,
        on_error: str,
        compression: str,
        claim_check_dir: str | PathLike[str] | None,
        timezone: str,
        key_column: str,
        value_column: str,
        carry: Sequence[Any],
        verify_checksum: bool,
        max_pending: int,
        table_schemas: Sequence[str],
    ) -> Self: ...
    @property
    def schema(self) -> Any:
        """An object with `__arrow_c_schema__`."""
    @property
    def stats(self) -> dict[str, int]: ...
    def decode(self, batch: Any) -> Any:
        """A batch with `__arrow_c_array__` in; an object with `__arrow_c_array__` out."""
    def flush(self) -> Any:
        """End of stream: rows still waiting for their schema, as errors per `on_error`."""

@final
class NativeEncoder:
    def __new__(cls, protocol: str, options: Sequence[tuple[str, str]]) -> Self: ...
    @property
    def schema(self) -> Any:
        """`key` (binary, nullable) and `value` (binary)."""
    def encode(self, batch: Any) -> Any:
        """A batch of events (either layout) in; a batch of `key`/`value` records out, plus
        `topic` (utf8) / `partition` (int32) when the input has `_topic` / `_partition`, whose
        rows are then encoded per destination."""

def infer_schema(
    batches: Sequence[Any],
    protocol: str | None,
    table: str,
    compression: str,
    key_column: str,
    value_column: str,
    table_schemas: Sequence[str],
) -> Any: ...

def schema_from_ddl(sql: str) -> Any:
    """The typed schema of a CREATE TABLE statement (an object with `__arrow_c_schema__`)."""

def schema_from_table_schema(text: str) -> Any:
    """The typed schema of a Simple-protocol `tableSchema` JSON text."""
