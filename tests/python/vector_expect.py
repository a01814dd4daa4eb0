"""What a golden vector's expected events look like in our two layouts."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import struct

import pyarrow as pa

FLOAT = 4


def envelope_text(col: dict):
    """The `_after`/`_before` map value the envelope layout gives for an expected column."""
    v = col["value"]
    if v is None:
        return None
    if isinstance(v, dict):
        return base64.b64encode(bytes.fromhex(v["hex"])).decode()
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (int, str)):
        return str(v)
    return v  # floats are compared numerically


def same_text(expected_col: dict, got: str | None) -> bool:
    want = envelope_text(expected_col)
    if isinstance(want, float):
        if got is None:
            return False
        if expected_col.get("type") == FLOAT:
            def f32(x):
                return struct.unpack("f", struct.pack("f", x))[0]
            return f32(float(got)) == f32(want)
        return float(got) == want
    return want == got


def _time(text: str) -> dt.timedelta:
    neg = text.startswith("-")
    h, m, s = text.lstrip("-").split(":")
    sec, _, frac = s.partition(".")
    td = dt.timedelta(hours=int(h), minutes=int(m), seconds=int(sec), microseconds=int((frac + "000000")[:6]))
    return -td if neg else td


def _members(field: pa.Field) -> tuple[str, list[str]] | None:
    text = (field.metadata or {}).get(b"mysql_type", b"").decode()
    kind = text.split("(", 1)[0]
    if kind not in ("enum", "set") or "(" not in text:
        return None
    inner = text[text.index("(") + 1 : text.rindex(")")]
    return kind, [m.strip().strip("'") for m in inner.split(",")]


def typed_value(expected_col: dict, field: pa.Field):
    """The Python value the typed layout should give for an expected column."""
    v = expected_col["value"]
    arrow_type = field.type
    if v is None:
        return None
    members = _members(field)
    if members and isinstance(v, int):
        kind, names = members
        if kind == "enum":
            return names[v - 1] if v else ""
        return ",".join(n for i, n in enumerate(names) if v >> i & 1)
    if isinstance(v, dict):
        raw = bytes.fromhex(v["hex"])
        return raw if pa.types.is_binary(arrow_type) else raw.decode()
    t = arrow_type
    if pa.types.is_integer(t):
        return int(v)
    if pa.types.is_decimal(t):
        return decimal.Decimal(str(v)).quantize(decimal.Decimal(1).scaleb(-t.scale))
    if pa.types.is_float32(t):
        return struct.unpack("f", struct.pack("f", float(v)))[0]
    if pa.types.is_floating(t):
        return float(v)
    if pa.types.is_date32(t):
        return dt.date.fromisoformat(v.replace("/", "-"))
    if pa.types.is_timestamp(t):
        ts = dt.datetime.fromisoformat(v.replace("/", "-"))
        return ts.replace(tzinfo=dt.UTC) if t.tz else ts
    if pa.types.is_duration(t):
        return _time(v)
    if pa.types.is_list(t):
        return [float(x) for x in json.loads(v)]
    return str(v)
