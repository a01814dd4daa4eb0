#!/usr/bin/env python3
"""Typed decoding of two more tables, the working tree beside another build, in one sitting.

The benches time one table (`bench.orders`). This times two unlike it, so that a change made
for that table is seen on others: `xb.sbtest`, sysbench's table (INTs and CHARs of digit
groups), and `xb.metrics`, sixteen numeric columns with NULLs (see `generate.rs`). Both are
written in every protocol by the working tree, and each build decodes the same files through
`BatchDecoder` into the typed layout (`time.rs`, which uses only API `e3e9c19` already had).

Each build is a small crate under target/tables/ that depends on its tree by path; BASE is
checked out as a git worktree under target/ab/, where `benches/ab.py` keeps it too. Rounds
alternate the builds, as in `ab.py`; each run prints the median of seven timings, and the
table the median and the best of the runs. With --instructions it counts one decode of each
corpus under callgrind instead.

    python3 tools/tables/tables.py
    python3 tools/tables/tables.py --base HEAD --instructions
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "benches"))
import ab  # noqa: E402  (benches/ab.py: its callgrind count and base worktree)

TABLES = ["sbtest", "metrics"]
PROTOCOLS = ["canal_json", "open", "craft", "simple_json", "simple_avro"]
MANIFEST = """\
[package]
name = "tables"
version = "0.0.0"
edition = "2021"
publish = false

# A workspace of its own, apart from the tree it sits in.
[workspace]

[dependencies]
ticdc_rs = {{ path = "{tree}" }}
arrow-array = "59"
arrow-schema = "59"

[features]
table_name_in_arrow = []

[[bin]]
name = "generate"
path = "{here}/generate.rs"

[[bin]]
name = "time"
path = "{here}/time.rs"

[profile.release]
lto = "thin"
codegen-units = 1
"""


def build(name: str, tree: Path) -> Path:
    """Builds the two programs against `tree`; returns the directory of the binaries."""
    crate = ROOT / "target" / "tables" / name
    crate.mkdir(parents=True, exist_ok=True)
    (crate / "Cargo.toml").write_text(MANIFEST.format(tree=tree, here=HERE))
    (crate / "Cargo.lock").write_bytes((tree / "Cargo.lock").read_bytes())
    command = ["cargo", "build", "--release", "--bins"]
    if "TableName" not in (tree / "src" / "lib.rs").read_text():
        command += ["--features", "table_name_in_arrow"]
    env = {**os.environ, "CARGO_TARGET_DIR": str(crate / "target")}
    subprocess.run(command, cwd=crate, env=env, check=True)
    return crate / "target" / "release"


def timed(binaries: Path, corpora: Path, table: str, protocol: str) -> tuple[int, float]:
    """Rows decoded and the median MiB/s of one run."""
    command = [binaries / "time", corpora, table, protocol]
    rows, rate = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    return int(rows), float(rate)


def instructions(binaries: Path, corpora: Path, table: str, protocol: str) -> int:
    """The instructions of one decode of the corpus, under callgrind."""
    command = [binaries / "time", corpora, table, protocol, "--once"]
    return ab.callgrind_count(command, "*counted_decode*", f"{table}.{protocol}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="e3e9c19", help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind) instead")
    parser.add_argument("--tables", nargs="+", default=TABLES, choices=TABLES)
    parser.add_argument("--protocols", nargs="+", default=PROTOCOLS, choices=PROTOCOLS)
    args = parser.parse_args()

    rev, base_tree = ab.base_worktree(args.base)
    builds = {"working tree": build("working-tree", ROOT), rev: build(rev, base_tree)}
    corpora = ROOT / "target" / "tables" / "corpora"
    corpora.mkdir(parents=True, exist_ok=True)
    subprocess.run([builds["working tree"] / "generate", corpora], check=True)

    names = list(builds)
    cases = [(t, p) for t in args.tables for p in args.protocols]
    if args.instructions:
        print(f"| corpus | working tree instructions | {rev} instructions | change |")
        print("| --- | --- | --- | --- |")
        for table, protocol in cases:
            new, old = (instructions(builds[name], corpora, table, protocol) for name in names)
            print(f"| {table}.{protocol} | {new:,} | {old:,} | {(new - old) / old:+.1%} |")
        return

    runs: dict[tuple[str, str, str], list[float]] = {(t, p, n): [] for t, p in cases for n in names}
    for round_ in range(args.rounds):
        for table, protocol in cases:
            rows = set()
            for name in names if round_ % 2 == 0 else names[::-1]:
                decoded, rate = timed(builds[name], corpora, table, protocol)
                rows.add(decoded)
                runs[table, protocol, name].append(rate)
            if len(rows) != 1:
                sys.exit(f"{table}.{protocol}: the builds decoded different numbers of rows ({sorted(rows)})")
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)

    print(f"| corpus | working tree MiB/s (median, best) | {rev} MiB/s (median, best) | ratio of medians |")
    print("| --- | --- | --- | --- |")
    for table, protocol in cases:
        new, old = (runs[table, protocol, name] for name in names)
        print(
            f"| {table}.{protocol} | {statistics.median(new):.0f}, {max(new):.0f} | {statistics.median(old):.0f}, "
            f"{max(old):.0f} | {statistics.median(new) / statistics.median(old):.2f}x |"
        )


if __name__ == "__main__":
    main()
