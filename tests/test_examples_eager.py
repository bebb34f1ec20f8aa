"""examples/eager_basics.py runs and prints what its comments say."""
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "eager_basics.py"


def _collatz_like(x, steps=6):
    y = x
    for _ in range(steps):
        y = y * 0.5 if y > 1.0 else y * y + 0.5
    return y


def test_eager_basics_output():
    root = str(EXAMPLE.parents[1])  # this checkout's layerkit, whatever is installed
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                         timeout=120, check=True, env=env).stdout
    lines = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    assert lines["matmul"].strip() == "[[4.0]]"
    assert lines["square(3.)"].strip() == "9.0"
    assert lines["grad(3.)"].strip() == "[6.0]"
    assert lines["second derivative"].strip() == "[2.0]"
    assert lines["log1pexp grad at 100 (plain)"].strip() == "[nan]"
    assert lines["log1pexp grad at 100 (custom)"].strip() == "[1.0]"
    value, grad = lines["dynamic model"].split("gradient:")
    assert float(value) == pytest.approx(_collatz_like(3.0), abs=1e-5)
    eps = 1e-4
    fd = (_collatz_like(3.0 + eps) - _collatz_like(3.0 - eps)) / (2 * eps)
    assert float(grad) == pytest.approx(fd, abs=1e-4)
    losses = [float(ln.split("loss=")[1].split()[0]) for ln in out.splitlines() if "loss=" in ln]
    assert len(losses) == 3 and losses[0] > losses[1] > losses[2]
