"""Open Protocol messages framed here by hand, the way tiflow's encoder writes them
(`../shared/protocols/open.md` §1–4), rather than by our own encoder: a 1,024-event batch with
multi-byte text in every event, Go's `<>&` and U+2028 escapes, TEXT columns in base64 and
binary strings in Go's quoted form."""

from __future__ import annotations

import base64
import decimal
import json
import struct

import pyarrow as pa

import ticdc_rs

EVENTS = 1024
TEXTS = ["中文字符", "😀 emoji", "Ünïcödé <b>&</b>", "line\u2028sep", "日本語のテキスト", "ascii"]


def go_json(value) -> str:
    """`encoding/json` as tiflow uses it: compact, raw UTF-8, `<>&` and U+2028/2029 escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    escapes = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
    for raw, escaped in escapes:
        text = text.replace(raw, escaped)
    return text


def frame(keys: list[dict], values: list[dict | None]) -> tuple[bytes, bytes]:
    key = struct.pack(">Q", 1)
    value = b""
    for k, v in zip(keys, values, strict=True):
        k_bytes = go_json(k).encode()
        v_bytes = b"" if v is None else go_json(v).encode()
        key += struct.pack(">Q", len(k_bytes)) + k_bytes
        value += struct.pack(">Q", len(v_bytes)) + v_bytes
    return key, value


def row(i: int) -> dict:
    text = TEXTS[i % len(TEXTS)] + f" #{i}"
    # Go map order: byte-wise alphabetical.
    return {
        "amount": {"t": 246, "f": 64, "v": f"{i}.{i % 100:02d}"},
        "body": {"t": 252, "f": 64, "v": base64.b64encode((text * 3).encode()).decode()},
        "id": {"t": 8, "h": True, "f": 11, "v": i},
        "name": {"t": 15, "f": 64, "v": text},
        "raw": {"t": 15, "f": 65, "v": "\\x00\\xff" + "测试"},
    }


def batch_of_1024() -> pa.RecordBatch:
    keys, values = [], []
    for i in range(EVENTS):
        keys.append({"ts": 440000000000000000 + i, "scm": "shop", "tbl": "orders", "t": 1})
        new = row(i)
        if i % 3 == 1:
            old = row(i)
            old["name"] = {"t": 15, "f": 64, "v": "旧的"}
            values.append({"u": new, "p": old})
        elif i % 3 == 2:
            values.append({"d": new})
        else:
            values.append({"u": new})
    key, value = frame(keys, values)
    return pa.record_batch({"key": pa.array([key], pa.binary()), "value": pa.array([value], pa.binary())})


def test_a_1024_event_batch_with_multibyte_text_decodes_whole():
    batch = batch_of_1024()
    # `decode` as mapInArrow calls it, the protocol detected from the framing.
    out = pa.Table.from_batches(list(ticdc_rs.decode(iter([batch])))).to_pylist()
    assert len(out) == EVENTS
    assert {r["_message"] for r in out} == {0}
    assert [r["_op"] for r in out[:3]] == ["INSERT", "UPDATE", "DELETE"]
    assert [r["_commit_ts"] for r in out] == [440000000000000000 + i for i in range(EVENTS)]
    for i, r in enumerate(out):
        image = dict(r["_before"] if r["_op"] == "DELETE" else r["_after"])
        text = TEXTS[i % len(TEXTS)] + f" #{i}"
        assert image["name"] == text
        assert image["body"] == text * 3
        assert r["_keys"] == ["id"]
    assert dict(out[1]["_before"])["name"] == "旧的"


def test_the_same_batch_in_the_typed_layout():
    batch = batch_of_1024()
    schema = ticdc_rs.infer_schema(batch, "open", "shop.orders")
    typed = ticdc_rs.Decoder("open", layout="typed", table="shop.orders", schema=schema).decode(batch)
    assert typed.num_rows == EVENTS
    assert typed.column("id").to_pylist() == list(range(EVENTS))
    names = typed.column("name").to_pylist()
    assert names == [TEXTS[i % len(TEXTS)] + f" #{i}" for i in range(EVENTS)]
    assert typed.column("raw").to_pylist()[0] == b"\x00\xff" + "测试".encode()
    assert typed.column("amount").to_pylist()[7] == decimal.Decimal("7.07")
    assert typed.column("_before").to_pylist()[1]["name"] == "旧的"


def test_types_are_spelt_as_mysql_does_though_the_flags_say_unsigned():
    # tiflow flags YEAR and BIT columns unsigned (0x80); MySQL spells neither `unsigned`.
    columns = {"b": {"t": 16, "f": 193, "v": 5}, "id": {"t": 3, "h": True, "f": 139, "v": 1},
               "u": {"t": 3, "f": 193, "v": 7}, "y": {"t": 13, "f": 193, "v": 2024}}
    key, value = frame([{"ts": 440000000000000000, "scm": "db", "tbl": "t", "t": 1}], [{"u": columns}])
    batch = pa.record_batch({"key": pa.array([key], pa.binary()), "value": pa.array([value], pa.binary())})
    row = ticdc_rs.Decoder("open").decode(batch).to_pylist()[0]
    assert dict(row["_types"]) == {"b": "bit", "id": "int unsigned", "u": "int unsigned", "y": "year"}
    assert dict(row["_after"]) == {"b": "5", "id": "1", "u": "7", "y": "2024"}


def test_old_values_with_mysql_flags_are_read_with_the_new_rows_flags():
    """New TiCDC v8.5.4 and v8.5.5 with `only-output-updated-columns` wrote MySQL's own column
    flags into `p` (`writeColumnFieldValueIfUpdated`): NOT NULL (1) where TiCDC means BINARY,
    MySQL's BINARY (128, on every numeric column) where TiCDC means UNSIGNED."""
    new = {"id": {"t": 3, "h": True, "f": 11, "v": 1}, "n": {"t": 3, "f": 1, "v": 3},
           "s": {"t": 15, "f": 0, "v": "b\\c"}, "u": {"t": 3, "f": 129, "v": 4294967295}}
    old = {"n": {"t": 3, "f": 129, "v": -5}, "s": {"t": 15, "f": 1, "v": "a\\d"}, "u": {"t": 3, "f": 161, "v": 7}}
    key, value = frame([{"ts": 450000000000000000, "scm": "db", "tbl": "t", "t": 1}] * 2,
                       [{"u": new, "p": old}, {"d": {"n": {"t": 3, "f": 65, "v": -9}}}])
    batch = pa.record_batch({"key": pa.array([key], pa.binary()), "value": pa.array([value], pa.binary())})
    out = ticdc_rs.Decoder("open").decode(batch).to_pylist()
    assert [r["_op"] for r in out] == ["UPDATE", "DELETE"]
    assert dict(out[0]["_before"]) == {"id": "1", "n": "-5", "s": "a\\d", "u": "7"}
    assert dict(out[1]["_before"]) == {"n": "-9"}

    schema = ticdc_rs.infer_schema(batch, "open", "db.t")
    assert schema.field("s").type == pa.string() and schema.field("n").type == pa.int32()
    typed = ticdc_rs.Decoder("open", layout="typed", table="db.t", schema=schema).decode(batch).to_pylist()
    assert typed[0]["_before"] == {"id": 1, "n": -5, "s": "a\\d", "u": 7}
    assert (typed[0]["s"], typed[0]["u"]) == ("b\\c", 4294967295)


def test_empty_row_items_have_no_event_and_spare_their_batch():
    """TiCDC before v4.0.15, v5.0.4 and v5.1.2 wrote `{}` for a row change of a transaction whose
    changes cancel out (`rowEventToMqMessage`); any other item without `u` or `d` is an error."""
    keys = [{"ts": 450000000000000000 + i, "scm": "db", "tbl": "t", "t": 1} for i in range(3)]
    new = {"id": {"t": 3, "h": True, "f": 11, "v": 1}}
    key, value = frame(keys, [{"u": new}, {}, {"u": new}])
    bad_key, bad_value = frame(keys[:1], [{"x": 1}])
    batch = pa.record_batch(
        {"key": pa.array([key, bad_key], pa.binary()), "value": pa.array([value, bad_value], pa.binary())}
    )
    out = ticdc_rs.Decoder("open", on_error="collect").decode(batch).to_pylist()
    assert [(r["_op"], r["_commit_ts"], r["_message"]) for r in out] == [
        ("INSERT", 450000000000000000, 0), ("INSERT", 450000000000000002, 0), ("ERROR", 0, 1)]
    assert "neither" in out[2]["_error"]


def test_blobs_written_without_flags_keep_their_bytes():
    """TiCDC v4.0.0 to v4.0.4 wrote no flags (`f` came in v4.0.5), so TEXT and BLOB columns share
    their type codes with nothing to tell them apart. Go's decoder reads them all as bytes: a
    value that is not UTF-8 is a BLOB's, and must not fail the message with its other events."""
    png = b"\x89PNG\r\n\x1a\n"
    rows = [{"id": {"t": 3, "h": True, "v": 1}, "img": {"t": 252, "v": base64.b64encode(png).decode()},
             "txt": {"t": 252, "v": base64.b64encode("中文".encode()).decode()}},
            {"id": {"t": 3, "h": True, "v": 2}, "img": {"t": 252, "v": None}, "txt": {"t": 252, "v": ""}}]
    key, value = frame([{"ts": 420000000000000000 + i, "scm": "db", "tbl": "t", "t": 1} for i in range(2)],
                       [{"u": r} for r in rows])
    batch = pa.record_batch({"key": pa.array([key], pa.binary()), "value": pa.array([value], pa.binary())})
    out = ticdc_rs.Decoder("open", on_error="collect").decode(batch).to_pylist()
    assert [r["_op"] for r in out] == ["INSERT", "INSERT"]
    assert dict(out[0]["_after"]) == {"id": "1", "img": base64.b64encode(png).decode(), "txt": "中文"}
    assert dict(out[0]["_types"])["img"] == "blob" and dict(out[0]["_types"])["txt"] == "text"

    schema = ticdc_rs.schema_from_ddl("CREATE TABLE db.t (id INT PRIMARY KEY, img BLOB, txt TEXT)")
    typed = ticdc_rs.Decoder("open", layout="typed", table="db.t", schema=schema).decode(batch)
    assert typed.column("img").to_pylist() == [png, None]
    assert typed.column("txt").to_pylist() == ["中文", ""]
    # Declared as text, bytes that are not UTF-8 fail their message, as any value that does not fit.
    as_text = ticdc_rs.schema_from_ddl("CREATE TABLE db.t (id INT PRIMARY KEY, img TEXT, txt TEXT)")
    failed = ticdc_rs.Decoder("open", layout="typed", table="db.t", schema=as_text, on_error="collect").decode(batch)
    assert failed.column("_op").to_pylist() == ["ERROR"]
    assert "img" in failed.column("_error")[0].as_py()
