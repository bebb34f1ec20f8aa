"""The AttributeError for a missing ``lk.X`` / ``lk.math.X`` / ``lk.nn.X`` /
``lk.layers.X``: it names the layerkit spelling when there is one (``lk.math.matmul``
-> ``lk.matmul``, ``lk.layers.dense`` -> ``lk.layers.Dense``) or says the TensorFlow
name is not supported, and why when that is a known decision (string tensors, GPUs).

Each namespace module defines ``__getattr__`` that raises :func:`missing_attribute`;
Python calls it only for names that are not there, so existing names cost nothing.
"""
from __future__ import annotations

import difflib
import sys
import types

# Where a name is looked for when it is missing from the namespace the user tried.
_SEARCH = ("layerkit", "layerkit.math", "layerkit.nn", "layerkit.linalg", "layerkit.random",
           "layerkit.layers", "layerkit.losses", "layerkit.metrics", "layerkit.optimizers",
           "layerkit.callbacks", "layerkit.initializers", "layerkit.regularizers",
           "layerkit.models", "layerkit.data")

# TensorFlow names layerkit does not have, by a decision worth stating.
_UNSUPPORTED = {
    "RaggedTensor": "ragged tensors are not supported; pad to a dense tensor",
    "ragged": "ragged tensors are not supported; pad to a dense tensor",
    "SparseTensor": "sparse tensors are not supported; use a dense tensor",
    "sparse": "sparse tensors are not supported; use a dense tensor",
    "strings": "string tensors are not supported",
    "string": "string tensors are not supported",
    "image": "tf.image is not supported (image preprocessing layers live in lk.layers)",
    "saved_model": "SavedModel is not supported: use Model.save('x.keras') or lk.onnx.export",
    "device": "layerkit runs on the CPU only: drop the `with tf.device(...)` block",
    "lite": "TensorFlow Lite is not supported; lk.onnx.export writes ONNX",
    "tpu": "TPUs are not supported (layerkit runs on the CPU)",
    "estimator": "tf.estimator is not supported; use Model.fit or a GradientTape loop",
}


def _display(module: str) -> str:
    return "lk" + module[len("layerkit"):]


def _spelling(module: str, name: str) -> str | None:
    own = sys.modules.get(module)
    public = [n for n in vars(own) if not n.startswith("_")] if own is not None else []
    for n in public:  # lk.layers.dense -> lk.layers.Dense
        if n.lower() == name.lower():
            return f"{_display(module)}.{n}"
    for other in _SEARCH:
        mod = sys.modules.get(other)
        if other == module or mod is None:
            continue
        value = vars(mod).get(name)
        if value is not None and not isinstance(value, types.ModuleType):
            return f"{_display(other)}.{name}"
    close = difflib.get_close_matches(name, public, n=1, cutoff=0.85)
    return f"{_display(module)}.{close[0]} (a close match)" if close else None


def missing_attribute(module: str, name: str) -> AttributeError:
    """The AttributeError for ``module.name`` (``module`` like ``'layerkit.math'``)."""
    head = f"module {module!r} has no attribute {name!r}"
    if name.startswith("__"):
        return AttributeError(head)  # protocol probes (copy, inspect, doctest): be quick
    if name in _UNSUPPORTED:
        return AttributeError(f"{head}: {_UNSUPPORTED[name]}")
    where = _spelling(module, name)
    if where is not None:
        return AttributeError(f"{head}; use {where}")
    return AttributeError(f"{head}: {_display(module)}.{name} is not supported by layerkit "
                          f"(no layerkit spelling of this TensorFlow/Keras name is known)")
