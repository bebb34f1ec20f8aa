"""The API reference site builds with warnings as errors (``mkdocs build --strict``): every
docstring mkdocstrings renders parses (Google style, arguments that exist), the guide
pages generated from README.md and the example pages link up. Skipped only when the
``docs`` extra is not installed (CI installs it with the test extra)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(600)
def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # one page per public namespace, the README's guides and the examples
    for page in ("index.html", "api/lk/index.html", "api/nn/index.html",
                 "api/ops/index.html", "api/extend/index.html", "examples/index.html",
                 "examples/export_onnx/index.html"):
        assert (site / page).is_file(), page
    assert any((site / "guide").iterdir())
    api = (site / "api/layers/index.html").read_text(encoding="utf-8")
    assert "layerkit.layers.Dense" in api and "kernel_initializer" in api
    shutil.rmtree(site)
