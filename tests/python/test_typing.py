"""The package is typed (`py.typed`): its stubs must describe the native module as built, and
mypy must accept the package's own code, or users' type checks inherit our mistakes."""

from __future__ import annotations

import pathlib
import subprocess
import sys

PACKAGE_ROOT = pathlib.Path(__import__("ticdc_rs").__file__).parent.parent


def mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=PACKAGE_ROOT, capture_output=True, text=True)


def test_stubs_match_the_native_module():
    run = mypy("mypy.stubtest", "ticdc_rs._ticdc_rs")
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_package_type_checks():
    run = mypy("mypy", "--ignore-missing-imports", "--no-incremental", "-p", "ticdc_rs")
    assert run.returncode == 0, run.stdout + run.stderr
