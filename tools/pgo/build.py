"""Builds the extension into the virtualenv with profile-guided optimisation (`make develop`).

A decoder's time goes to branches on what the wire holds (a quote or a digit, an escape or
not, NULL or a value, which column type comes next): PGO lets the compiler lay out and inline
that code for the paths real messages take. Three steps, each with its own target folder so
that none rebuilds another's work:

1. the extension built instrumented (`-Cprofile-generate`) and installed;
2. `tools/pgo/train.py` run by it: a workload unlike the benchmarks' (see there);
3. the counts merged by `llvm-profdata` (rustup's `llvm-tools`, which matches rustc's LLVM)
   and the extension built with them (`-Cprofile-use`) and installed.

Without `llvm-profdata` (no rustup), or with `TICDC_PGO=0`, it builds as plain
`maturin develop --release` does. Nothing is redone while the sources, the training and the
installed extension are those of the last build (`target/pgo/stamp`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "target" / "pgo"
EXTENSION = ROOT / "python" / "ticdc_rs" / "_ticdc_rs.abi3.so"
INPUTS = ["src", "Cargo.toml", "Cargo.lock", "pyproject.toml", "tools/pgo", "examples/make_sample_data.py",
          "examples/data/orders.sql", "tests/fixtures"]


def run(cmd: list[str], **env: str) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, **env})


def rustc(*args: str) -> str:
    return subprocess.run(["rustc", *args], check=True, capture_output=True, text=True).stdout


def llvm_profdata() -> Path | None:
    """rustup's llvm-profdata for the active toolchain, installed if it is not yet."""
    host = next(line.split()[1] for line in rustc("-vV").splitlines() if line.startswith("host:"))
    tool = Path(rustc("--print", "sysroot").strip()) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.exists() and shutil.which("rustup"):
        subprocess.run(["rustup", "component", "add", "llvm-tools"], cwd=ROOT)
    return tool if tool.exists() else None


def fingerprint() -> str:
    """The sources and training of the build, and rustc's version."""
    h = hashlib.sha256(rustc("-vV").encode())
    for top in INPUTS:
        path = ROOT / top
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def installed() -> str:
    return hashlib.sha256(EXTENSION.read_bytes()).hexdigest() if EXTENSION.exists() else ""


def maturin(target: Path, rustflags: str = "") -> None:
    flags = " ".join(f for f in (os.environ.get("RUSTFLAGS", ""), rustflags) if f)
    maturin = Path(sys.executable).parent / "maturin"
    run([str(maturin), "develop", "--release", "--quiet"], CARGO_TARGET_DIR=str(target), RUSTFLAGS=flags,
        VIRTUAL_ENV=str(Path(sys.executable).parent.parent))


def main() -> None:
    profdata = None if os.environ.get("TICDC_PGO") == "0" else llvm_profdata()
    if profdata is None:
        print("building without profile-guided optimisation (TICDC_PGO=0, or no llvm-profdata)")
        maturin(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")))
        return
    stamp, wanted = WORK / "stamp", fingerprint()
    if stamp.exists() and stamp.read_text().split() == [wanted, installed()]:
        return
    profiles, merged = WORK / "profiles", WORK / "merged.profdata"
    shutil.rmtree(profiles, ignore_errors=True)
    maturin(WORK / "generate", f"-Cprofile-generate={profiles}")
    run([sys.executable, str(ROOT / "tools" / "pgo" / "train.py")])
    run([str(profdata), "merge", "-o", str(merged), str(profiles)])
    maturin(WORK / "use", f"-Cprofile-use={merged}")
    stamp.write_text(f"{wanted} {installed()}\n")


if __name__ == "__main__":
    main()
