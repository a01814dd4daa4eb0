#!/usr/bin/env python3
"""The working tree's benchmarks beside another build's, in one sitting.

Builds the criterion benches of the working tree and of BASE (default `e3e9c19`, the build
issue 25 measures against; checked out as a git worktree under target/ab/), then runs each
GROUP on both builds in alternating order, ROUNDS times, and prints the median and the best of
criterion's middle throughput estimates, with the ratio of the medians. Shared hosts drift by
10-40% over minutes: alternating rounds keeps both sides in the same conditions, and the best
round is the one least disturbed.

With --instructions it counts instead of timing: one timed iteration of each GROUP (criterion's
`--test` runs it once) under callgrind, on each build, and their difference in percent. The noise does
not disturb them; they are blind to memory stalls, which the timed rounds see. BENCHMARKS.md
("How changes are checked") uses both. Averages over `--profile-time` runs are not a substitute:
the bench's setup decodes fall in or out of them with the number of iterations run.

    python3 benches/ab.py canal_json/typed open/typed/x16
    python3 benches/ab.py --base HEAD~3 --rounds 9 craft/typed
    python3 benches/ab.py --base acc46a6 --instructions simple_avro/typed
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHES = ["decode", "open", "craft", "simple"]
THROUGHPUT = re.compile(r"thrpt:\s+\[\S+ \S+ (\S+) (\S+)/s")
UNITS = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}


def build(tree: Path, target_dir: Path) -> dict[str, Path]:
    """Builds the bench binaries of `tree`; returns each binary by its bench's name."""
    command = ["cargo", "bench", "--no-run", "--message-format=json"]
    for bench in BENCHES:
        command += ["--bench", bench]
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir)}
    out = subprocess.run(command, cwd=tree, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    binaries = {}
    for line in out.splitlines():
        message = json.loads(line)
        target = message.get("target", {})
        if message.get("executable") and "bench" in target.get("kind", []):
            binaries[target["name"]] = Path(message["executable"])
    return binaries


def benchmarks_of(binary: Path) -> list[str]:
    """The benchmark ids a criterion binary holds (`group/function`)."""
    command = [binary, "--bench", "--list"]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    return [line.removesuffix(": benchmark") for line in out.splitlines() if line.endswith(": benchmark")]


def selects(group: str) -> str:
    """The criterion filter for the benchmarks under `group` (a group, or a whole id)."""
    return f"^{re.escape(group)}(/|$)"


def throughput(binary: Path, group: str, seconds: int) -> float:
    """Criterion's middle throughput estimate for `group`, in MiB/s."""
    command = [binary, "--bench", selects(group), "--warm-up-time", "1", "--measurement-time", str(seconds)]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    found = THROUGHPUT.search(out)
    if not found:
        sys.exit(f"no throughput for {group} from {binary}:\n{out}")
    return float(found.group(1)) * UNITS[found.group(2)]


def instructions(binary: Path, group: str) -> int:
    """The instructions of one timed iteration of `group` (criterion's `--test`), under callgrind."""
    command = [binary, "--bench", selects(group), "--test"]
    return callgrind_count(command, "criterion::bencher::Bencher*iter*", group)


def callgrind_count(command: list, collect: str, what: str) -> int:
    """The instructions `command` runs inside the functions `collect` matches, under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect={collect}"]
        subprocess.run(valgrind + command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for line in out.read_text().splitlines():
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    sys.exit(f"no instruction count for {what}")


def base_worktree(base: str) -> tuple[str, Path]:
    """The short hash of `base`, and a git worktree of it under target/ab/ (made if missing)."""
    rev = subprocess.run(
        ["git", "rev-parse", "--short", base], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True
    ).stdout.strip()
    tree = ROOT / "target" / "ab" / rev
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", "-f", str(tree), rev], cwd=ROOT, check=True)
    return rev, tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("groups", nargs="+", metavar="GROUP", help="e.g. canal_json/typed, open/typed/x16")
    parser.add_argument("--base", default="e3e9c19", help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=2, help="criterion's measurement time per run")
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind) instead")
    args = parser.parse_args()

    rev, base_tree = base_worktree(args.base)
    builds = {"working tree": build(ROOT, ROOT / "target"), rev: build(base_tree, base_tree / "target")}

    listed = {name: [(b, i) for b in bins.values() for i in benchmarks_of(b)] for name, bins in builds.items()}
    binaries = {}
    for group in args.groups:
        for name in builds:
            found = [(b, i) for b, i in listed[name] if re.match(selects(group), i)]
            if len(found) != 1:
                ids = ", ".join(i for _, i in found) or "none"
                sys.exit(f"{group} must name one benchmark of {name}'s benches; it names {ids}")
            binaries[group, name] = found[0][0]

    names = list(builds)
    if args.instructions:
        print(f"| group | working tree instructions | {rev} instructions | change |")
        print("| --- | --- | --- | --- |")
        for group in args.groups:
            new, old = (instructions(binaries[group, name], group) for name in names)
            print(f"| {group} | {new:,} | {old:,} | {(new - old) / old:+.1%} |")
        return

    runs: dict[tuple[str, str], list[float]] = {key: [] for key in binaries}
    for round_ in range(args.rounds):
        for group in args.groups:
            for name in names if round_ % 2 == 0 else names[::-1]:
                runs[group, name].append(throughput(binaries[group, name], group, args.seconds))
        print(f"round {round_ + 1} of {args.rounds} done", file=sys.stderr)

    print(f"| group | working tree MiB/s (median, best) | {rev} MiB/s (median, best) | ratio of medians |")
    print("| --- | --- | --- | --- |")
    for group in args.groups:
        new, old = runs[group, names[0]], runs[group, names[1]]
        print(
            f"| {group} | {statistics.median(new):.0f}, {max(new):.0f} | {statistics.median(old):.0f}, "
            f"{max(old):.0f} | {statistics.median(new) / statistics.median(old):.2f}x |"
        )


if __name__ == "__main__":
    main()
