"""``mypy layerkit/`` passes with the [tool.mypy] configuration in pyproject.toml, and that
configuration skips no module wholesale (no ``ignore_errors``). Skipped only when mypy
is not installed (the test extra installs it, so CI runs it). The cache lives in the
system temp directory: a cold run takes ~15 s of CPU here, a warm one ~5 s."""
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parent.parent


def test_config_skips_no_module():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert not conf.get("ignore_errors")
    for override in conf.get("overrides", []):
        assert not override.get("ignore_errors"), override["module"]


@pytest.mark.timeout(300)
def test_mypy_passes_on_layerkit():
    cache = Path(tempfile.gettempdir()) / "layerkit-mypy-cache"
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache),
                           "--no-error-summary", "layerkit"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
