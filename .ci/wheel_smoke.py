"""Smoke test of an installed ticdc_rs wheel: it imports (from site-packages, not a checkout) and
decodes a Canal-JSON message of the project's own fixtures, in both layouts.

    python .ci/wheel_smoke.py [tests/fixtures/canal-json/own_insert_and_watermark.json]
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa

import ticdc_rs

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "canal-json" / "own_insert_and_watermark.json"


def main() -> None:
    fixture = Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE
    vector = json.loads(fixture.read_text(encoding="utf-8"))
    values = [bytes.fromhex(m["value_hex"]) for m in vector["messages"]]
    batch = pa.record_batch({"value": pa.array(values, pa.binary())})
    assert "site-packages" in ticdc_rs.__file__, f"ticdc_rs imported from {ticdc_rs.__file__}, not the wheel"

    envelope = ticdc_rs.Decoder("canal-json").decode(batch).to_pylist()
    assert [r["_op"] for r in envelope] == ["INSERT", "WATERMARK"], envelope
    after = dict(envelope[0]["_after"])
    assert (after["id"], after["amount"], after["note"]) == ("1", "12.50", "café <b>"), after

    schema = ticdc_rs.infer_schema(batch, "canal-json", table="shop.orders")
    typed = ticdc_rs.Decoder("canal-json", layout="typed", table="shop.orders", schema=schema).decode(batch)
    row = typed.to_pylist()[0]
    assert (row["id"], row["amount"]) == (1, Decimal("12.50")), row
    print(f"ticdc_rs {ticdc_rs.__version__} from {Path(ticdc_rs.__file__).parent}: decoded {len(values)} messages")


if __name__ == "__main__":
    main()
