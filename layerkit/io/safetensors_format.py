"""The ``safetensors`` format: dicts of tensors, and a model's weights by layer path.

Files are read and written through the ``safetensors`` package (the optional extra
``safetensors``), so they open in any safetensors implementation and theirs open here.
Writes are atomic, like checkpoints: the serialized bytes go to a temporary file that
is fsynced and renamed over the target (``layerkit.checkpoint.format``'s helper), so a
crash leaves the old file or the new one. Serializing holds one in-memory copy of the
tensors for the duration of the write. Reads return arrays that the file does not back
(writable, owned by layerkit; the file can be replaced or deleted afterwards).

A model's weights are stored under the paths that ``lk.Checkpoint`` gives them below the
model (``layer-0/kernel``, ``layer-1/cell/recurrent_kernel``, ``dense_1/bias`` for a
subclassed model's attribute ``dense_1``), so a file written by one model loads into a
model built by the same code, in any order of variable creation.
"""
from __future__ import annotations

import os

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import PathLike
from layerkit.checkpoint.checkpoint import _META_KIND, Checkpoint, _Graph, _key, _restore
from layerkit.checkpoint.format import atomic_write_bytes
from layerkit.io._optional import require

__all__ = ["save_safetensors", "load_safetensors", "save_model_safetensors",
           "load_model_safetensors"]

_FEATURE = "safetensors files"
# The dtypes safetensors' NumPy API stores (it has no string, object or complex128 types).
_CODES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
          "U64": np.uint64, "I32": np.int32, "U32": np.uint32, "I16": np.int16,
          "U16": np.uint16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
          "C64": np.complex64}
_DTYPES = frozenset(np.dtype(t) for t in _CODES.values())


def _library():
    return require("safetensors.numpy", "safetensors", _FEATURE)


def _as_array(value, key: str) -> np.ndarray:
    a = np.asarray(value._v if isinstance(value, Tensor) else value)
    if a.dtype.newbyteorder("=") not in _DTYPES:
        raise TypeError(f"save_safetensors: tensor {key!r} has dtype {a.dtype}, which the "
                        f"safetensors format cannot store (supported: "
                        f"{sorted(d.name for d in _DTYPES)})")
    return np.ascontiguousarray(a)


def save_safetensors(tensors: dict, path: PathLike, metadata: dict | None = None) -> str:
    """Write a dict of tensors to a ``.safetensors`` file, atomically.

    Args:
        tensors: ``{name: Tensor | Variable | ndarray | array-like}``; names are strings.
        path: the file to write (replaced atomically if it exists).
        metadata: optional ``{str: str}`` stored in the file header.

    Returns:
        The path written.

    Raises:
        ImportError: the ``safetensors`` package is not installed
            (``pip install layerkit[safetensors]``).
        TypeError: a name or metadata entry is not a string, or a dtype the format
            cannot store.

    Examples:
        >>> import os, tempfile, layerkit as lk
        >>> p = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> _ = lk.io.save_safetensors({"w": lk.ones((2, 3))}, p)
        >>> lk.io.load_safetensors(p)["w"].shape
        (2, 3)
    """
    st = _library()
    arrays = {}
    for key, value in tensors.items():
        if not isinstance(key, str):
            raise TypeError(f"save_safetensors: tensor names must be strings; received "
                            f"{key!r} ({type(key).__name__})")
        arrays[key] = _as_array(value, key)
    if metadata is not None:
        bad = {k: v for k, v in metadata.items()
               if not isinstance(k, str) or not isinstance(v, str)}
        if bad:
            raise TypeError(f"save_safetensors: metadata must map str to str; received "
                            f"{bad!r}")
        metadata = dict(metadata)
    path = os.fspath(path)
    atomic_write_bytes(path, st.save(arrays, metadata=metadata))
    return path


def _open(path):
    st = _library()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_safetensors: no such file: {path!r}")
    try:
        return st.safe_open(path, framework="np")
    except Exception as e:  # safetensors raises its own SafetensorError
        raise ValueError(f"load_safetensors: {path!r} is not a valid safetensors file "
                         f"({e})") from None


def load_safetensors(
    path: PathLike, with_metadata: bool = False,
) -> dict[str, Tensor] | tuple[dict[str, Tensor], dict[str, str]]:
    """Read every tensor of a ``.safetensors`` file.

    Args:
        path: the file.
        with_metadata: also return the header's metadata dict.

    Returns:
        ``{name: Tensor}`` in file order, or ``(tensors, metadata)`` with
        ``with_metadata`` (``metadata`` is ``{}`` when the file has none).

    Raises:
        ImportError: the ``safetensors`` package is not installed.
        FileNotFoundError: no such file.
        ValueError: not a valid safetensors file, or a dtype NumPy cannot hold
            (bfloat16, float8).
    """
    with _open(path) as f:
        try:
            tensors = {k: wrap(f.get_tensor(k)) for k in f.keys()}
        except Exception as e:
            raise ValueError(f"load_safetensors: cannot read {os.fspath(path)!r} as NumPy "
                             f"arrays ({e})") from None
        meta = f.metadata() or {}
    return (tensors, meta) if with_metadata else tensors


# ---- a model's weights ----------------------------------------------------------------------
_ROOT = "model"  # the model's name inside the Checkpoint that save_weights/load_weights use


def model_weight_paths(model) -> dict:
    """``{path: Variable}`` for every weight of ``model``, by its checkpoint path below the
    model (``layer-0/kernel``, ...)."""
    return {_key(segs[1:], name): var
            for (segs, name), var in _Graph(Checkpoint(model=model)).variables.items()
            if segs[:1] == (_ROOT,)}


def save_model_safetensors(model, path) -> str:
    """Write ``model``'s weights to a safetensors file under their layer paths (what
    ``model.save_weights("x.safetensors")`` does).

    Returns:
        The path written.
    """
    return save_safetensors({k: v._v for k, v in model_weight_paths(model).items()}, path)


class _Reader:
    """A safetensors file seen as a checkpoint of ``Checkpoint(model=...)``: what
    ``layerkit.checkpoint``'s restore reads (so shape/dtype checks, skip_mismatch and
    deferred values for layers not built yet work as for checkpoints)."""

    def __init__(self, handle, path: str, root) -> None:
        self._f = handle
        self.path = path
        self._keys = {f"{_ROOT}/{k}": k for k in handle.keys()}
        graph = _Graph(root)
        known = {_key(segs, name): (segs, name) for segs, name in graph.variables}
        variables = {}
        for key in self._keys:
            if key in known:
                segs, name = known[key]
            else:  # a variable not created yet: it belongs to the deepest existing object
                parts = key.split("/")
                cut = max(i for i in range(len(parts)) if tuple(parts[:i]) in graph.objects)
                segs, name = tuple(parts[:cut]), "/".join(parts[cut:])
            variables[key] = {"object": list(segs), "name": name}
        self.meta = {"kind": _META_KIND, "variables": variables, "states": {}}

    def __contains__(self, key) -> bool:
        return key in self._keys

    def shape(self, key: str) -> tuple:
        return tuple(self._f.get_slice(self._keys[key]).get_shape())

    def dtype(self, key: str) -> np.dtype:
        code = self._f.get_slice(self._keys[key]).get_dtype()
        if code not in _CODES:
            raise ValueError(f"load_weights({self.path!r}): tensor {self._keys[key]!r} has "
                             f"dtype {code}, which NumPy cannot hold")
        return np.dtype(_CODES[code])

    def read_many(self, keys) -> dict:
        return {k: self._f.get_tensor(self._keys[k]) for k in keys}


def load_model_safetensors(model, path, skip_mismatch: bool = False):
    """Restore ``model``'s weights from a safetensors file written by
    :func:`save_model_safetensors` (or by any tool using the same names).

    Values for layers that are not built yet are applied when they are built. For a
    built model, every weight must be in the file and every tensor of the file must be
    a weight of the model (unless ``skip_mismatch``).

    Returns:
        The restore status (``lk.checkpoint.CheckpointLoadStatus``).

    Raises:
        ValueError: shapes/dtypes differ, or (built model) weights missing from the file
            or tensors the model has no weight for; nothing is assigned then.
    """
    path = os.fspath(path)
    root = Checkpoint(model=model)
    with _open(path) as f:
        if model.built and not skip_mismatch:
            have, stored = set(model_weight_paths(model)), set(f.keys())
            problems = [f"{what}: {sorted(keys)}" for what, keys in (
                ("weights missing from the file", have - stored),
                ("tensors in the file that are not weights of the model", stored - have))
                if keys]
            if problems:
                raise ValueError(f"load_weights({path!r}): the tensors do not match model "
                                 f"'{model.name}' (nothing was loaded); "
                                 + "; ".join(problems))
        status = _restore(root, _Reader(f, path, root), skip_mismatch=skip_mismatch)
    return status.expect_partial()
