"""``lk.show_config()`` / ``python -m layerkit``: the facts a bug report needs.

Versions come from the installed distributions' metadata, so nothing optional (pyarrow,
h5py, tensorboard, ...) is imported just to report it.
"""
from __future__ import annotations

import os
import sys
from typing import Any, TextIO

__all__ = ["show_config", "config_info"]

_REQUIRED = ("numpy", "numexpr", "pyarrow")
# distribution -> the layerkit extra that installs it
_OPTIONAL = {"h5py": "h5", "safetensors": "safetensors", "tensorboard": "tensorboard",
             "onnx": "onnx", "onnxruntime": "test", "matplotlib": "examples",
             "scikit-learn": "examples", "psutil": "bench", "mpi4py": "mpi", "mpich": "mpi",
             "pillow": "images"}
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                "NUMEXPR_MAX_THREADS", "LAYERKIT_MALLOC_TUNING", "LAYERKIT_DISTRIBUTE_TIMEOUT")


def _version(dist: str) -> str | None:
    from importlib import metadata  # not at import time: it costs ~30 ms

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _blas() -> dict:
    import numpy as np

    try:
        deps: Any = np.show_config(mode="dicts").get("Build Dependencies", {})
    except Exception as e:  # numpy builds without the meson config  # pragma: no cover
        return {"blas": f"unknown ({e})"}
    out = {}
    for kind in ("blas", "lapack"):
        info = deps.get(kind, {})
        text = f"{info.get('name', '?')} {info.get('version', '')}".strip()
        config = info.get("openblas configuration")
        out[kind] = f"{text} ({config})" if config else text
    return out


def config_info() -> dict:
    """What :func:`show_config` prints, as a dict of sections (``{section: {key: str}}``)."""
    import platform

    import numexpr

    import layerkit
    from layerkit.data.parallel import default_parallelism
    from layerkit.kernels import blockwise as _blockwise

    deps = {d: _version(d) or "not installed" for d in _REQUIRED}
    optional = {f"{d} [{extra}]": _version(d) or "not installed"
                for d, extra in _OPTIONAL.items()}
    cores: int | None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        cores = os.cpu_count()
    threads = {
        "cpu cores (usable / total)": f"{cores} / {os.cpu_count()}",
        "numexpr threads": str(numexpr.get_num_threads()),
        "layerkit nn kernel threads": str(_blockwise.THREADS),
        "layerkit data AUTOTUNE workers": str(default_parallelism()),
    }
    threads.update({v: os.environ.get(v, "(unset)") for v in _THREAD_VARS})
    return {
        "layerkit": {"version": layerkit.__version__,
                     "path": os.path.dirname(os.path.abspath(layerkit.__file__))},
        "dependencies": deps,
        "optional": optional,
        "blas": _blas(),
        "threads": threads,
        "python": {"version": sys.version.split()[0],
                   "implementation": platform.python_implementation(),
                   "executable": sys.executable},
        "platform": {"system": platform.platform(), "machine": platform.machine(),
                     "processor": platform.processor() or "?"},
    }


def show_config(file: TextIO | None = None) -> None:
    """Print layerkit's version, its dependencies' and optional extras' versions, the BLAS
    NumPy uses, thread settings, Python and platform (for bug reports).

    Args:
        file: where to print (default ``sys.stdout``).

    Examples:
        >>> import layerkit as lk
        >>> lk.show_config()  # doctest: +SKIP
        layerkit
          version: 0.1.0
        ...
    """
    out = file or sys.stdout
    for section, entries in config_info().items():
        print(section, file=out)
        for key, value in entries.items():
            print(f"  {key}: {value}", file=out)


def main() -> int:
    show_config()
    return 0
