"""Writes the fuzz target's seed corpus (fuzz/corpus/decode, not committed) from the shared vectors.

Each vector case becomes one input in the target's format: a byte choosing the protocol and the
compression, then each message as a u16 key length (0xffff: no key), a u16 value length and the
bytes.

    python fuzz/seed_corpus.py [../shared/vectors]
"""

import json
import pathlib
import struct
import sys

PROTOCOLS = {"open": 0, "craft": 1, "canal-json": 2, "simple-json": 3, "simple-avro": 4}
COMPRESSIONS = {"snappy": 1, "lz4": 2}


def seed(case: dict) -> bytes | None:
    protocol = PROTOCOLS.get(case.get("protocol"))
    if protocol is None:
        return None
    compression = COMPRESSIONS.get((case.get("config") or {}).get("compression"), 0)
    out = bytearray([protocol + 6 * compression])
    for m in case.get("messages") or []:
        key = bytes.fromhex(m["key_hex"]) if m.get("key_hex") is not None else None
        value = bytes.fromhex(m.get("value_hex") or "")
        if len(value) > 0xFFFF or (key is not None and len(key) >= 0xFFFF):
            continue
        out += struct.pack("<HH", 0xFFFF if key is None else len(key), len(value)) + (key or b"") + value
    return bytes(out)


def main() -> None:
    here = pathlib.Path(__file__).resolve().parent
    vectors = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent.parent / "shared" / "vectors"
    corpus = here / "corpus" / "decode"
    corpus.mkdir(parents=True, exist_ok=True)
    written = 0
    for path in sorted(vectors.glob("*/*.json")):
        doc = json.loads(path.read_text())
        for i, case in enumerate(doc.get("cases", [doc])):
            data = seed(case)
            if data is not None:
                (corpus / f"{path.parent.name}_{path.stem}_{i}").write_bytes(data)
                written += 1
    print(f"{written} seeds in {corpus}")


if __name__ == "__main__":
    main()
