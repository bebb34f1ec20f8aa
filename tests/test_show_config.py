"""lk.show_config() / python -m layerkit: versions, BLAS, threads, platform."""
import io
import pathlib
import subprocess
import sys
import tomllib

import numpy as np

import layerkit as lk


def test_show_config_reports_versions_blas_and_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    out = io.StringIO()
    lk.show_config(file=out)
    text = out.getvalue()
    assert f"  version: {lk.__version__}" in text
    assert f"  numpy: {np.__version__}" in text
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    assert f"  blas: {blas}" in text
    assert "  OMP_NUM_THREADS: 3" in text
    assert f"  version: {sys.version.split()[0]}" in text
    for section in ("dependencies", "optional", "threads", "python", "platform"):
        assert f"\n{section}\n" in text


def test_python_m_layerkit_without_importing_optional_packages():
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "layerkit"],
                         capture_output=True, text=True,
                         cwd=pathlib.Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert f"numpy: {np.__version__}" in out.stdout
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines()}
    assert "layerkit._info" in imported  # the import log is complete ...
    assert not imported & {"pyarrow", "h5py", "safetensors", "tensorboard", "onnx",
                           "onnxruntime", "mpi4py", "PIL"}  # ... and lean


def test_py_typed_marker_is_package_data():
    root = pathlib.Path(lk.__file__).resolve().parent
    assert (root / "py.typed").is_file()
    config = tomllib.loads((root.parent / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["layerkit"]
    extras = config["project"]["optional-dependencies"]
    for extra, package in (("h5", "h5py"), ("safetensors", "safetensors"),
                           ("tensorboard", "tensorboard"), ("onnx", "onnx"), ("mpi", "mpi4py"),
                           ("mpi", "mpich"), ("images", "pillow")):
        assert any(r.startswith(package) for r in extras[extra])
        assert any(r.startswith(package) for r in extras["test"])
