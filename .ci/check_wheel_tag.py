"""Checks with `auditwheel show` that Linux wheels are manylinux wheels that keep their word: the
platform tag auditwheel finds a wheel consistent with (the oldest glibc its symbols allow) must be
manylinux, and the file name must claim a manylinux tag no older than that one.

    python .ci/check_wheel_tag.py dist/ticdc_rs-*.whl
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def glibc(tag: str) -> tuple[tuple[int, int], str] | None:
    """manylinux_2_17_x86_64 -> ((2, 17), "x86_64"); None for a tag that is not manylinux."""
    if m := re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", tag):
        return (int(m.group(1)), int(m.group(2))), m.group(3)
    if m := re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)", tag):
        return LEGACY[m.group(1)], m.group(2)
    return None


def check(wheel: Path) -> str | None:
    report = subprocess.run(["auditwheel", "show", str(wheel)], check=True, capture_output=True, text=True).stdout
    print(report)
    # '... is consistent with the following platform tag: "manylinux_2_17_x86_64".' (wrapped)
    m = re.search(r'platform tag:\s*"([^"]+)"', report)
    found = m.group(1) if m else None
    needed = glibc(found) if found else None
    if needed is None:
        return f"{wheel.name}: auditwheel finds it consistent with {found!r}, not a manylinux tag"
    claimed = wheel.name.removesuffix(".whl").split("-")[-1].split(".")
    kept = [t for t in claimed if (g := glibc(t)) and g[1] == needed[1] and g[0] >= needed[0]]
    if not kept:
        return f"{wheel.name}: claims {claimed}, but its symbols need {found}"
    print(f"ok: {wheel.name} claims {kept}; auditwheel: {found}")
    return None


def main() -> int:
    errors = [e for e in (check(Path(w)) for w in sys.argv[1:]) if e]
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    return 1 if errors or len(sys.argv) < 2 else 0


if __name__ == "__main__":
    sys.exit(main())
