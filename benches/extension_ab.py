"""Two or more builds of the Python extension, timed side by side on the benchmarks' corpus.

Each build is a copy of `python/ticdc_rs/_ticdc_rs.abi3.so`; rounds alternate them, each round a
fresh process per build that decodes `benches/peers.py`'s corpus (bench.orders, 20,000 changes)
into the typed layout in every protocol, nine times, and prints the median MB/s of each. The
table gives the median of the rounds per build and protocol, and each build beside the first.
The installed extension is put back at the end. For the profile-guided build against a plain one:

    TICDC_PGO=0 make develop && cp python/ticdc_rs/_ticdc_rs.abi3.so /tmp/plain.so
    make develop && cp python/ticdc_rs/_ticdc_rs.abi3.so /tmp/pgo.so
    .venv/bin/python benches/extension_ab.py /tmp/plain.so /tmp/pgo.so --rounds 6
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALLED = ROOT / "python" / "ticdc_rs" / "_ticdc_rs.abi3.so"
PROTOCOLS = ["canal-json", "open", "craft", "simple-json", "simple-avro"]
TABLE = "bench.orders"


def install(build: Path) -> None:
    """Puts `build` in the extension's place as a new file, so that the one this process loaded
    (it encodes the corpora) stays mapped as it was instead of being overwritten under it."""
    staged = INSTALLED.with_suffix(".staged")
    shutil.copy2(build, staged)
    os.replace(staged, INSTALLED)


def corpora(n: int) -> dict[str, list]:
    import peers
    import pyarrow as pa

    batches = pa.table({"value": pa.array(peers.generate(n, 42), pa.binary())}).to_batches(max_chunksize=10_000)
    return {"canal-json": batches, **peers.protocol_corpora(batches)}


def child(corpus_dir: str) -> None:
    """One round of one build: the median MB/s of each protocol, as `protocol=value` words."""
    import peers
    import pyarrow as pa

    import ticdc_rs

    words = []
    for protocol in PROTOCOLS:
        with pa.ipc.open_file(Path(corpus_dir) / f"{protocol}.arrow") as f:
            batches = [f.get_batch(i) for i in range(f.num_record_batches)]
        if protocol == "canal-json":
            schema = peers.TYPED_SCHEMA
        else:
            schema = ticdc_rs.infer_schema(batches[:1], protocol, TABLE)
        nbytes = sum(b.column("value").nbytes for b in batches)
        times = []
        for _ in range(9):
            decoder = ticdc_rs.Decoder(protocol, layout="typed", table=TABLE, schema=schema)
            start = time.perf_counter()
            for b in batches:
                decoder.decode(b)
            times.append(time.perf_counter() - start)
        words.append(f"{protocol}={nbytes / statistics.median(times) / 1e6:.1f}")
    print(" ".join(words))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="*", help="copies of _ticdc_rs.abi3.so to compare")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("-n", "--messages", type=int, default=20_000)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    if len(args.builds) < 2:
        ap.error("give at least two builds")
    import pyarrow as pa

    saved = Path(tempfile.mkdtemp(prefix="ticdc_ab_")) / "installed.so"
    shutil.copy2(INSTALLED, saved)
    corpus_dir = saved.parent
    for protocol, batches in corpora(args.messages).items():
        with pa.ipc.new_file(corpus_dir / f"{protocol}.arrow", batches[0].schema) as f:
            for b in batches:
                f.write_batch(b)
    rates: dict[tuple[str, str], list[float]] = {}
    try:
        for r in range(args.rounds):
            for build in args.builds:
                install(build)
                out = subprocess.run([sys.executable, __file__, "--child", str(corpus_dir)], check=True,
                                     capture_output=True, text=True, cwd=ROOT / "benches").stdout
                print(f"round {r + 1} {build}: {out.strip()}", flush=True)
                for word in out.split():
                    protocol, rate = word.split("=")
                    rates.setdefault((build, protocol), []).append(float(rate))
    finally:
        install(saved)
        shutil.rmtree(corpus_dir, ignore_errors=True)
    first = args.builds[0]
    print(f"\nmedian MB/s of {args.rounds} rounds; x = against {first}")
    print(f"{'protocol':<12} " + " ".join(f"{Path(b).name:>22}" for b in args.builds))
    for protocol in PROTOCOLS:
        base = statistics.median(rates[(first, protocol)])
        cells = []
        for build in args.builds:
            m = statistics.median(rates[(build, protocol)])
            cells.append(f"{m:>14.1f} {m / base:>6.2f}x")
        print(f"{protocol:<12} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
