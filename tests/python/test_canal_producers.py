"""Canal-JSON as other producers write it: Alibaba Canal itself (its `id`/`es`/`ts`/`gtid`
fields, full upper-case type texts, `pkNames: null`, spatial columns as ISO-8859-1 text) and
streams whose column types change between rows of a sample."""

from __future__ import annotations

import base64
import decimal
import json

import pyarrow as pa

import ticdc_rs


def batch(*messages: dict) -> pa.RecordBatch:
    return pa.record_batch({"value": pa.array([json.dumps(m).encode() for m in messages], pa.binary())})


def canal(kind: str, data: list[dict] | None, types: dict | None, old: list[dict] | None = None, **extra) -> dict:
    message = {"data": data, "database": "db", "es": 1700000000000, "id": 7, "isDdl": False,
               "mysqlType": types, "old": old, "pkNames": None, "table": "t", "ts": 1700000000123, "type": kind}
    message.update(extra)
    return message


def test_a_type_change_in_the_sample_widens_the_inferred_column():
    sample = batch(
        canal("INSERT", [{"id": "1", "v": "30"}], {"id": "INT", "v": "INT"}),
        {"data": None, "database": "db", "table": "t", "isDdl": True, "type": "ALTER",
         "sql": "ALTER TABLE t MODIFY COLUMN v BIGINT", "es": 1, "ts": 2},
        canal("INSERT", [{"id": "2", "v": "70000000000"}], {"id": "INT", "v": "BIGINT"}),
        canal("INSERT", [{"id": "3", "v": "1.5"}], {"id": "INT", "v": "DECIMAL(10,1)"}),
    )
    schema = ticdc_rs.infer_schema(sample, "canal-json", "db.t")
    assert schema.field("v").type == pa.decimal128(20, 1)
    out = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=schema).decode(sample).to_pylist()
    assert [r["_op"] for r in out] == ["INSERT", "DDL", "INSERT", "INSERT"]
    values = [decimal.Decimal("30"), decimal.Decimal("70000000000"), decimal.Decimal("1.5")]
    assert [r["v"] for r in out if r["_op"] == "INSERT"] == values


def test_spatial_columns_are_their_wkb_bytes():
    point = bytes([0, 0, 0, 0, 1, 1, 0, 0, 0]) + bytes([0, 0, 0, 0, 0, 0, 0xF0, 0x3F]) * 2  # SRID 0, POINT(1 1)
    as_text = point.decode("latin-1")
    sample = batch(canal("INSERT", [{"id": "1", "g": as_text, "p": as_text, "n": None}],
                         {"id": "INT", "g": "GEOMETRY", "p": "POINT", "n": "MULTIPOLYGON"}))
    schema = ticdc_rs.infer_schema(sample, "canal-json", "db.t")
    assert [schema.field(c).type for c in "gpn"] == [pa.binary()] * 3
    typed = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=schema).decode(sample)
    assert typed.column("g").to_pylist() == [point]
    assert typed.column("p").to_pylist() == [point]
    envelope = ticdc_rs.Decoder("canal-json").decode(sample).to_pylist()[0]
    after = dict(envelope["_after"])
    assert base64.b64decode(after["g"]) == point
    assert after["n"] is None


def test_original_canal_fields_and_full_type_texts():
    types = {"id": "INT(11)", "price": "DECIMAL(8, 0) UNSIGNED ZEROFILL", "name": "VARCHAR(255)",
             "flag": "TINYINT(1)", "kind": "ENUM('a','b')", "raw": "VARBINARY(4)"}
    row = {"id": "1", "price": "00000042", "name": "名字", "flag": "1", "kind": "b", "raw": "\u0000\u00ff"}
    message = canal("UPDATE", [row], types, old=[{"name": "old"}], gtid="", sqlType={"id": 4})
    sample = batch(message)
    envelope = ticdc_rs.Decoder("canal-json").decode(sample).to_pylist()
    assert [(r["_op"], r["_schema"], r["_table"], r["_keys"]) for r in envelope] == [("UPDATE", "db", "t", [])]
    assert dict(envelope[0]["_before"])["name"] == "old"
    assert dict(envelope[0]["_before"])["price"] == "00000042"

    schema = ticdc_rs.infer_schema(sample, "canal-json", "db.t")
    typed = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=schema).decode(sample).to_pylist()[0]
    assert typed["price"] == decimal.Decimal(42)
    assert typed["name"] == "名字" and typed["_before"]["name"] == "old"
    assert typed["kind"] == "b"
    assert typed["raw"] == b"\x00\xff"


def test_rows_after_a_ddl_in_the_same_message_keep_their_values():
    """The storage sink's variant puts several objects in one value: a DDL between rows must not
    shift the typed rows after it (it once took the next row's cells)."""
    ddl = {"data": None, "database": "db", "table": "t", "isDdl": True, "type": "ALTER",
           "sql": "ALTER TABLE t ADD COLUMN z INT", "es": 1, "ts": 2}
    watermark = {"id": 0, "database": "", "table": "", "pkNames": None, "isDdl": False, "type": "TIDB_WATERMARK",
                 "es": 1, "ts": 2, "sql": "", "sqlType": None, "mysqlType": None, "data": None, "old": None,
                 "_tidb": {"watermarkTs": 449543017000000000}}

    def insert(i):
        return canal("INSERT", [{"id": str(i), "v": str(10 * i)}], {"id": "int", "v": "int"})

    value = "\n".join(json.dumps(m) for m in [insert(1), ddl, insert(2), watermark, insert(3)]).encode()
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.int32())])
    dec = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=schema)
    out = dec.decode(pa.record_batch({"value": pa.array([value], pa.binary())})).to_pylist()
    assert [(r["_op"], r["id"], r["v"]) for r in out] == [
        ("INSERT", 1, 10), ("DDL", None, None), ("INSERT", 2, 20), ("WATERMARK", None, None), ("INSERT", 3, 30)]


# Flink's and Flink CDC's Canal-JSON writers: no `isDdl`, no `mysqlType`, no `_tidb`.
FLINK_CDC = [
    {"old": None, "data": [{"col1": "1", "col2": "1"}], "type": "INSERT", "database": "db", "table": "t",
     "pkNames": ["col1"]},
    {"old": [{"col1": "1", "col2": "1"}], "data": [{"col1": "1", "col2": "x"}], "type": "UPDATE", "database": "db",
     "table": "t", "pkNames": ["col1"]},
    {"old": None, "data": [{"col1": "2", "col2": "2"}], "type": "DELETE", "database": "db", "table": "t",
     "pkNames": ["col1"]},
    # Canal's initial-load rows, as canal-adapter and Flink write them.
    {"data": [{"col1": "3", "col2": "3"}], "type": "INIT", "database": "db", "table": "t", "pkNames": ["col1"]},
]


def test_canal_json_without_isddl_or_types_is_detected_and_read_as_text():
    out = pa.Table.from_batches(list(ticdc_rs.decode(iter([batch(*FLINK_CDC)])))).to_pylist()
    assert [r["_op"] for r in out] == ["INSERT", "UPDATE", "DELETE", "INSERT"]
    assert [dict(r["_after"] or []) for r in out] == [{"col1": "1", "col2": "1"}, {"col1": "1", "col2": "x"}, {},
                                                      {"col1": "3", "col2": "3"}]
    assert dict(out[1]["_before"]) == {"col1": "1", "col2": "1"}
    assert dict(out[2]["_before"]) == {"col1": "2", "col2": "2"}
    assert all(r["_types"] == [] for r in out), "no type is made up for a column the message did not type"
    assert all(r["_keys"] == ["col1"] for r in out)

    inferred = ticdc_rs.infer_schema(batch(*FLINK_CDC), "canal-json", "db.t")
    assert inferred.types == [pa.string(), pa.string()]
    assert all(not (f.metadata or {}) for f in inferred)
    declared = pa.schema([pa.field("col1", pa.int32()), pa.field("col2", pa.string())])
    typed = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=declared).decode(batch(*FLINK_CDC))
    assert typed.column("col1").to_pylist() == [1, 1, 2, 3]
    assert typed.column("_before").to_pylist()[1] == {"col1": 1, "col2": "1"}


def test_a_column_missing_from_a_present_mysql_type_still_fails_as_in_tidb():
    message = canal("INSERT", [{"id": "1", "v": "2"}], {"id": "INT"})
    row = ticdc_rs.Decoder("canal-json", on_error="collect").decode(batch(message)).to_pylist()[0]
    assert row["_op"] == "ERROR" and "mysql type does not found, column: v" in row["_error"]


def test_simple_json_is_detected_whatever_its_key_order():
    watermark = {"type": "WATERMARK", "commitTs": 449543017000000010, "buildTs": 1, "version": 1}
    out = pa.Table.from_batches(list(ticdc_rs.decode(iter([batch(watermark)])))).to_pylist()
    assert [(r["_op"], r["_commit_ts"]) for r in out] == [("WATERMARK", 449543017000000010)]


def test_errors_name_the_value_and_inference_says_why_nothing_was_read():
    message = canal("INSERT", [{"id": "1", "v": "a"}], {"id": "INT", "v": "INT"})
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.int32())])
    row = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=schema,
                           on_error="collect").decode(batch(message)).to_pylist()[0]
    assert 'column v: value "a" does not fit int32' in row["_error"].lower()
    numbers = {"data": [{"id": 1}], "database": "db", "table": "t", "isDdl": False, "type": "INSERT",
               "mysqlType": {"id": "int"}, "old": None, "pkNames": ["id"]}
    numbers["data"] = [{"id": True}]
    try:
        ticdc_rs.infer_schema(batch(numbers), "canal-json", "db.t")
    except ticdc_rs.UsageError as e:
        assert "no row of db.t" in str(e) and "column value must be a string or null" in str(e)
    else:
        raise AssertionError("inference of a sample with no readable row must fail")


def ticdc_v53(kind: str, data: list[dict], old: list | None, types: dict, codes: dict) -> dict:
    """A row as TiCDC v4.0.9 to v5.3 wrote it (`canal.go` `buildColumn`, `canal_flat.go`): no
    `unsigned` in `mysqlType`, every integer's `sqlType` promoted to the next wider JDBC type,
    BINARY/VARBINARY values as their raw text (code VARCHAR), `"old":[null]` on INSERT, no `_tidb`."""
    return {"id": 0, "database": "db", "table": "t", "pkNames": ["id"], "isDdl": False, "type": kind, "es": 1,
            "ts": 0, "sql": "", "sqlType": codes, "mysqlType": types, "data": data, "old": old}


V53_TYPES = {"id": "int", "tiny": "tinyint", "big": "bigint", "raw": "varbinary", "blob": "blob"}
V53_CODES = {"id": -5, "tiny": 5, "big": 3, "raw": 12, "blob": 2004}


def test_ticdc_before_v5_4_unsigned_integers_and_binary_text():
    row = {"id": "1", "tiny": "255", "big": "18446744073709551615", "raw": "café\ufffd", "blob": "\u00ff\u0000"}
    insert = ticdc_v53("INSERT", [row], [None], V53_TYPES, V53_CODES)
    update = ticdc_v53("UPDATE", [dict(row, tiny="-128", raw="new")], [dict(row, big="-1")], V53_TYPES, V53_CODES)
    # Alibaba Canal's key order (fastjson sorts keys): `data` and `old` come before `sqlType`.
    update_sorted = dict(sorted(update.items()))
    assert list(update_sorted).index("old") < list(update_sorted).index("sqlType")
    sample = batch(insert, update, update_sorted)

    envelope = ticdc_rs.Decoder("canal-json").decode(sample).to_pylist()
    assert [r["_op"] for r in envelope] == ["INSERT", "UPDATE", "UPDATE"]
    assert base64.b64decode(dict(envelope[0]["_after"])["raw"]) == "café\ufffd".encode()
    assert base64.b64decode(dict(envelope[0]["_after"])["blob"]) == b"\xff\x00"

    schema = ticdc_rs.infer_schema(sample, "canal-json", "db.t")
    assert [schema.field(c).type for c in ("id", "tiny", "big", "raw")] == [
        pa.int64(), pa.int16(), pa.decimal128(20, 0), pa.binary()]
    typed = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=schema).decode(sample).to_pylist()
    assert [r["tiny"] for r in typed] == [255, -128, -128]
    assert typed[0]["big"] == decimal.Decimal(18446744073709551615)
    assert [r["_before"]["big"] for r in typed[1:]] == [decimal.Decimal(-1)] * 2
    assert [r["raw"] for r in typed] == ["café\ufffd".encode(), b"new", b"new"]
    assert [r["_before"]["raw"] for r in typed[1:]] == ["café\ufffd".encode()] * 2
    assert [r["blob"] for r in typed] == [b"\xff\x00"] * 3


def test_binary_text_stays_iso_8859_1_where_the_code_says_binary():
    """From v5.4 TiCDC writes BINARY/VARBINARY as ISO-8859-1 under the code BLOB, and Alibaba Canal
    under VARBINARY; an integer's promoted code with `unsigned` in its type changes nothing."""
    for code in (2004, -3):
        message = ticdc_v53("INSERT", [{"id": "1", "tiny": "200", "raw": "caf\u00e9"}], None,
                            {"id": "int", "tiny": "tinyint unsigned", "raw": "varbinary"},
                            {"id": 4, "tiny": 5, "raw": code})
        schema = ticdc_rs.infer_schema(batch(message), "canal-json", "db.t")
        out = ticdc_rs.Decoder("canal-json", layout="typed", table="db.t", schema=schema).decode(batch(message))
        assert out.column("raw").to_pylist() == [b"caf\xe9"]
        assert out.schema.field("id").type == pa.int32() and out.column("tiny").to_pylist() == [200]
