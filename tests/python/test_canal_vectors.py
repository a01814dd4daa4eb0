"""Every Canal-JSON golden vector decodes to its expected events, in both layouts."""

from __future__ import annotations

import base64
import json

import pyarrow as pa
import pytest
from conftest import load_vector, vector_files
from vector_expect import same_text, typed_value

import ticdc_rs

VECTORS = vector_files("canal-json")


def messages_batch(vector: dict) -> pa.RecordBatch:
    keys = [None if m["key_hex"] is None else bytes.fromhex(m["key_hex"]) for m in vector["messages"]]
    values = [bytes.fromhex(m["value_hex"]) for m in vector["messages"]]
    return pa.record_batch({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())})


def decoder_options(vector: dict, tmp_path) -> dict:
    cfg = vector["config"]
    options = {"compression": cfg.get("compression") or "none", "timezone": cfg.get("time_zone") or "UTC"}
    files = vector.get("claim_check_files")
    if files:
        for name, body in files.items():
            (tmp_path / name).write_bytes(bytes.fromhex(body["hex"]))
        options["claim_check_dir"] = str(tmp_path)
    return options


def claim_check_bodies(vector: dict) -> pa.RecordBatch:
    """The full messages stored in a vector's claim-check files."""
    keys, values = [], []
    for body in vector["claim_check_files"].values():
        raw = bytes.fromhex(body["hex"])
        try:
            stored = json.loads(raw)
            values.append(base64.b64decode(stored["value"]))
            keys.append(None if stored.get("key") is None else base64.b64decode(stored["key"]))
        except (ValueError, KeyError, TypeError):
            values.append(raw)
            keys.append(None)
    return pa.record_batch({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())})


def check_image(expected_cols, got_map, what):
    if expected_cols is None:
        assert got_map is None, what
        return
    got = dict(got_map)
    assert set(got) == {c["name"] for c in expected_cols}, what
    for c in expected_cols:
        assert same_text(c, got[c["name"]]), f"{what} column {c['name']}: {c['value']!r} vs {got[c['name']]!r}"


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
def test_envelope(path, tmp_path):
    vector = load_vector(path)
    batch = messages_batch(vector)
    options = decoder_options(vector, tmp_path)
    if vector.get("expected_error"):
        with pytest.raises(ticdc_rs.DecodeError) as info:
            ticdc_rs.Decoder("canal-json", **options).decode(batch)
        assert info.value.protocol == "canal-json"
        assert isinstance(info.value.offset, int)
        out = ticdc_rs.Decoder("canal-json", on_error="collect", **options).decode(batch).to_pylist()
        errors = [r for r in out if r["_op"] == "ERROR"]
        assert errors and all(r["_raw_value"] == batch.column("value")[r["_message"]].as_py() for r in errors)
        return
    rows = ticdc_rs.Decoder("canal-json", **options).decode(batch).to_pylist()
    expected = vector["expected"]
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        assert row["_commit_ts"] == want["commit_ts"]
        if want["type"] == "resolved":
            assert row["_op"] == "WATERMARK"
        elif want["type"] == "ddl":
            assert row["_op"] == "DDL"
            assert row["_ddl"] == want["query"]
            assert row["_ddl_type"] == want["ddl_kind"]
            assert row["_schema"] == (want["schema"] or None)
        else:
            assert row["_op"] == want["row_type"].upper()
            assert (row["_schema"], row["_table"]) == (want["schema"], want["table"])
            assert row["_keys"] == want["pk_names"]
            assert row["_handle_key_only"] == want["handle_key_only"]
            if not vector.get("claim_check_files"):
                assert row["_claim_check"] == want["claim_check_location"]
            check_image(want["columns"], row["_after"], "after")
            check_image(want["old_columns"], row["_before"], "before")
            image = want["columns"] or want["old_columns"]
            assert dict(row["_types"]) == {c["name"]: c["mysql_type"] for c in image}


ROW_VECTORS = [
    p for p in VECTORS
    if not load_vector(p).get("expected_error") and any(e["type"] == "row" for e in load_vector(p)["expected"])
]


@pytest.mark.parametrize("path", ROW_VECTORS, ids=[p.stem for p in ROW_VECTORS])
def test_typed(path, tmp_path):
    vector = load_vector(path)
    batch = messages_batch(vector)
    options = decoder_options(vector, tmp_path)
    first = next(e for e in vector["expected"] if e["type"] == "row")
    table = f"{first['schema']}.{first['table']}"
    sample = batch
    if vector.get("claim_check_files"):
        sample = claim_check_bodies(vector)
    schema = ticdc_rs.infer_schema(sample, "canal-json", table, compression=options["compression"])
    dec = ticdc_rs.Decoder("canal-json", layout="typed", table=table, schema=schema, **options)
    out = dec.decode(batch)
    assert out.schema == dec.schema.arrow
    rows = out.to_pylist()
    def concerns_table(e):
        if e["type"] == "ddl":
            return e["schema"] == first["schema"] and e["table"] in ("", None, first["table"])
        return e["type"] == "resolved" or (e["schema"], e["table"]) == (first["schema"], first["table"])

    expected = [e for e in vector["expected"] if concerns_table(e)]
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        if want["type"] != "row":
            continue
        image = want["columns"] if want["columns"] is not None else want["old_columns"]
        for c in image:
            field = schema.field(c["name"])
            assert row[c["name"]] == typed_value(c, field), f"column {c['name']} ({field.type})"
        if want["row_type"] == "update" and want["old_columns"]:
            for c in want["old_columns"]:
                assert row["_before"][c["name"]] == typed_value(c, schema.field(c["name"]))
        else:
            assert row["_before"] is None


def test_vectors_present():
    assert VECTORS, "no Canal-JSON vectors found"
