"""The code base stays ruff-clean (ruff is part of the test extra)."""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ruff_clean():
    exe = shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    try:
        out = subprocess.run([*cmd, "check", "layerkit", "tests", "benchmarks", "examples"],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    assert out.returncode == 0, out.stdout + out.stderr
