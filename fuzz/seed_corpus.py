"""Writes the decode fuzz targets' seed corpora (fuzz/corpus/<target>, not committed) from the
shared vectors, or from the project's own fixtures (tests/fixtures) where those are absent.

Each vector case becomes one input of its protocol's target (open, craft, canal_json,
simple_json, simple_avro): a byte choosing the compression (0 none, 1 snappy, 2 lz4; +3 for the
Asia/Shanghai server time zone), then each message as a u16 key length (0xffff: no key), a u16
value length and the bytes. Cases too long for `max_len` are also written one message a seed, so
that every message is in reach. The same messages seed the `decode` target, whose first byte
chooses the protocol (its index in `Protocol::ALL`, or 5: detect), the compression, view columns
and the time zone; the cases alternate between naming the protocol and detecting it, and between
the layouts' string columns. The differential target needs no seeds.

    python fuzz/seed_corpus.py [VECTORS_DIR] [--max-len N] [--out DIR]
"""

import argparse
import json
import pathlib
import struct

# In the order of `Protocol::ALL`, whose index the `decode` target's first byte gives.
TARGETS = {"open": "open", "craft": "craft", "canal-json": "canal_json", "simple-json": "simple_json",
           "simple-avro": "simple_avro"}
PROTOCOL_INDEX = {protocol: i for i, protocol in enumerate(TARGETS)}
DETECT = len(PROTOCOL_INDEX)
COMPRESSIONS = {"snappy": 1, "lz4": 2}


def frame(messages) -> bytes:
    out = bytearray()
    for key, value in messages:
        if len(value) > 0xFFFF or (key is not None and len(key) >= 0xFFFF):
            continue
        out += struct.pack("<HH", 0xFFFF if key is None else len(key), len(value)) + (key or b"") + value
    return bytes(out)


def seeds(case: dict, max_len: int, number: int):
    """The seeds of one case: its protocol's target and its inputs, then the `decode` target's."""
    protocol = case.get("protocol")
    target = TARGETS.get(protocol)
    if target is None:
        return target, [], []
    compression = COMPRESSIONS.get((case.get("config") or {}).get("compression"), 0)
    messages = [(bytes.fromhex(m["key_hex"]) if m.get("key_hex") is not None else None,
                 bytes.fromhex(m.get("value_hex") or "")) for m in case.get("messages") or []]
    chosen = DETECT if number % 2 else PROTOCOL_INDEX[protocol]
    views = number // 2 % 2
    own_head, decode_head = bytes([compression]), bytes([chosen + 6 * compression + 18 * views])
    parts = [frame(messages)]
    if len(parts[0]) + 1 > max_len and len(messages) > 1:
        parts += [frame([m]) for m in messages]
    return target, [own_head + p for p in parts], [decode_head + p for p in parts]


def main() -> None:
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser()
    parser.add_argument("vectors", nargs="?", type=pathlib.Path)
    parser.add_argument("--max-len", type=int, default=2048)
    parser.add_argument("--out", type=pathlib.Path, default=here / "corpus", help="the corpora's folder")
    args = parser.parse_args()
    vectors = args.vectors or here.parent.parent / "shared" / "vectors"
    if not vectors.is_dir():
        vectors = here.parent / "tests" / "fixtures"
    written = {}
    number = 0
    for path in sorted(vectors.glob("*/*.json")):
        doc = json.loads(path.read_text())
        for i, case in enumerate(doc.get("cases", [doc])):
            target, own, decode = seeds(case, args.max_len, number)
            number += target is not None
            for name, data in ((target, own), ("decode", decode)):
                for j, seed in enumerate(data):
                    corpus = args.out / name
                    corpus.mkdir(parents=True, exist_ok=True)
                    (corpus / f"{path.parent.name}_{path.stem}_{i}_{j}").write_bytes(seed)
                    written[name] = written.get(name, 0) + 1
    (args.out / "differential").mkdir(parents=True, exist_ok=True)
    print(f"seeds from {vectors}: " + ", ".join(f"{t} {n}" for t, n in sorted(written.items())))


if __name__ == "__main__":
    main()
