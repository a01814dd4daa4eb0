"""The training run of the profile-guided build (`tools/pgo/build.py`).

Run by the instrumented extension, it decodes a workload unlike the benchmarks' (whose table,
`bench.orders`, it never sees): the demo's table `shop.orders` (ENUM, SET, JSON, DECIMAL, dates
and times, its DDL and watermarks), made larger by the demo's own generator, in every protocol,
into both layouts; then the project's fixtures, which hold real messages of every protocol and
forms the generator does not write. The counts it leaves tell the compiler which branches the
decoders take, nothing about the benchmarks' data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa

import ticdc_rs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import make_sample_data as sample  # noqa: E402  (examples/make_sample_data.py)

TABLE = "shop.orders"
PROTOCOLS = ["open", "craft", "simple-json", "simple-avro"]
ROUNDS = 3


def canal_batches() -> list[pa.RecordBatch]:
    stream = sample.generate(n_inserts=12_000, n_updates=9_000, n_deletes=2_000)
    return sample.to_table(stream).select(["key", "value"]).to_batches(max_chunksize=5_000)


def reencoded(batches: list[pa.RecordBatch]) -> dict[str, list[pa.RecordBatch]]:
    envelope = ticdc_rs.Decoder("canal-json")
    events = [envelope.decode(b) for b in batches]
    corpora = {}
    for protocol in PROTOCOLS:
        encoder = ticdc_rs.Encoder(protocol)
        corpora[protocol] = [encoder.encode(e) for e in events]
    return corpora


def fixture_batches() -> list[tuple[str, pa.RecordBatch]]:
    """Each fixture's messages as one batch, with its protocol (the malformed ones left out)."""
    out = []
    for path in sorted((ROOT / "tests" / "fixtures").glob("*/*.json")):
        fixture = json.loads(path.read_text())
        if fixture.get("expected_error"):
            continue
        messages = fixture["messages"]
        keys = [bytes.fromhex(m["key_hex"]) if m.get("key_hex") else None for m in messages]
        values = [bytes.fromhex(m["value_hex"]) for m in messages]
        batch = pa.record_batch({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())})
        out.append((fixture["protocol"], batch))
    return out


def main() -> None:
    schema = ticdc_rs.schema_from_ddl((ROOT / "examples" / "data" / "orders.sql").read_text())
    canal = canal_batches()
    corpora = {"canal-json": canal, **reencoded(canal)}
    fixtures = fixture_batches()
    for _ in range(ROUNDS):
        for protocol, batches in corpora.items():
            for layout in ("typed", "envelope"):
                options = {"table": TABLE, "schema": schema} if layout == "typed" else {}
                decoder = ticdc_rs.Decoder(protocol, layout=layout, **options)
                for b in batches:
                    decoder.decode(b)
        for protocol, batch in fixtures:
            ticdc_rs.Decoder(protocol).decode(batch)
    print(f"trained on {sum(b.num_rows for b in canal)} changes of {TABLE} in {len(corpora)} protocols")


if __name__ == "__main__":
    main()
