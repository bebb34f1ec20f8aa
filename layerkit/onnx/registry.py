"""The table from op records to ONNX emitters (keyed by the record object itself).

An emitter is ``emitter(b, n) -> output names``: ``b`` is the
:class:`~layerkit.onnx._builder.Builder` that adds ONNX nodes and constants, ``n`` the
:class:`~layerkit.onnx._builder.NodeView` of one graph node (its ONNX input names,
symbolic shapes, dtypes and attributes). It returns the ONNX name of each output of
the record, in order (a single name for one output); outputs it leaves out (residuals
kept only for gradients) must not be read by the rest of the graph.

This module imports nothing heavy so op modules may register their own emitters.
"""
from __future__ import annotations

from collections.abc import Callable

from layerkit._core.op import Op

_EMITTERS: dict = {}


def register_onnx(record: Op, emitter: Callable, replace: bool = False) -> None:
    """Register how one op record is written as ONNX nodes.

    Args:
        record: the op record (an ``Op`` object, never its name).
        emitter: ``emitter(b, n)`` returning the ONNX output name(s); see the module
            docstring of :mod:`layerkit.onnx.registry`.
        replace: allow replacing an existing emitter for ``record``.

    Raises:
        TypeError: ``record`` is not an op record or ``emitter`` is not callable.
        ValueError: ``record`` already has an emitter and ``replace`` is False.

    Examples:
        >>> import numpy as np
        >>> from layerkit.onnx import register_onnx
        >>> from layerkit.primitives import reduce
        >>> def emit_cumprod(b, n):   # exp(cumsum(log x)): positive inputs only
        ...     axis = b.const(np.int64(n.attrs["axis"]))
        ...     return b.add("Exp", [b.add("CumSum", [b.add("Log", n.inputs), axis])])
        >>> register_onnx(reduce._CUMPROD, emit_cumprod)   # doctest: +SKIP
    """
    if not isinstance(record, Op):
        raise TypeError(f"register_onnx: record must be an op record (layerkit Op), "
                        f"received {type(record).__name__}")
    if not callable(emitter):
        raise TypeError(f"register_onnx: emitter for op '{record.name}' must be callable, "
                        f"received {type(emitter).__name__}")
    if record in _EMITTERS and not replace:
        raise ValueError(f"register_onnx: op '{record.name}' already has an ONNX emitter; "
                         f"pass replace=True to replace it")
    _EMITTERS[record] = emitter


def emitter_for(record: Op) -> Callable | None:
    """The emitter registered for ``record``, or None."""
    return _EMITTERS.get(record)


def registered() -> list:
    """The op records that have an ONNX emitter."""
    return list(_EMITTERS)
