"""Fused regions as numexpr expressions: compile cache and the measured dispatch rule.

Compiled expressions live in layerkit's own cache keyed by the expression text and the
input dtypes (numexpr's ``evaluate`` cache keeps references to the last arrays and
looks names up in the caller's frame). A kernel is called with its arrays as explicit
positional arguments in the compiled signature's order, so no frame lookup happens;
if numexpr's compile API is unavailable, ``evaluate`` is used with an explicit
``local_dict``.
"""
from __future__ import annotations

import threading

import numpy as np

# The executor reads BLOCK_MIN_SIZE and BLOCK_ELEMS from here (tests patch them here).
from layerkit._core.tuning import BLOCK_ELEMS, BLOCK_MIN_SIZE, NE_MIN_OPS, NE_MIN_SIZE  # noqa: F401

try:
    import numexpr as _ne
    from numexpr.necompiler import NumExpr as _NumExpr
    from numexpr.necompiler import getContext as _get_context
    from numexpr.necompiler import getExprNames as _get_names
    from numexpr.necompiler import getType as _get_type
except ImportError:  # pragma: no cover - numexpr is a hard dependency; be defensive
    _ne = None
    _NumExpr = None

# numexpr handles only these dtypes; anything else (float16, int8, uint*) stays NumPy.
_NE_KINDS = {np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)}

# ---- the measured dispatch rule --------------------------------------------------------------
# NE_MIN_OPS, NE_MIN_SIZE, BLOCK_MIN_SIZE and BLOCK_ELEMS come from layerkit._core.tuning,
# with the bench_function.py --dispatch figures that set them. In short: numexpr never
# wins for float32 or for any region with a transcendental (its tanh/exp are scalar libm
# calls here); for float64 arithmetic it only ties or edges out block-wise NumPy from
# about 4M elements. Block-wise NumPy beats whole-array ufuncs from about 256k elements
# (temporaries stay in cache); below that, inline ufuncs with reused buffers win.
_TRANSCENDENTAL = ("exp", "log", "tanh", "sin", "cos", "tan", "sqrt", "expm1", "log1p",
                   "arctan", "**")


def numexpr_wins(dtypes: set, n_ops: int, size: int, expr: str) -> bool:
    """The dispatch rule above: True if this region should run through numexpr."""
    if _NumExpr is None or size < NE_MIN_SIZE or n_ops < NE_MIN_OPS:
        return False
    floats = {d for d in dtypes if d.kind == "f"}
    if floats != {np.dtype(np.float64)}:
        return False
    return not any(t in expr for t in _TRANSCENDENTAL)


# ---- compile cache -----------------------------------------------------------------------------
_CACHE: dict = {}
_LOCK = threading.Lock()


class NumexprKernel:
    """One compiled expression; call with arrays in ``self.names`` order."""

    __slots__ = ("expr", "names", "_compiled", "_vml")

    def __init__(self, expr: str, names: list, compiled, vml: bool) -> None:
        self.expr = expr
        self.names = names
        self._compiled = compiled
        self._vml = vml

    def __call__(self, args: list, out=None):
        if self._compiled is not None:
            return self._compiled(*args, out=out, order="K", casting="safe",
                                  ex_uses_vml=self._vml)
        return _ne.evaluate(self.expr, local_dict=dict(zip(self.names, args)), out=out)


def compile_expr(expr: str, sig: tuple) -> NumexprKernel:
    """Compile ``expr`` for inputs ``sig`` = ((name, dtype), ...), cached by text and dtypes.

    Raises:
        Exception: whatever numexpr raises for an expression it cannot compile.
    """
    key = (expr, tuple((n, np.dtype(d).str) for n, d in sig))
    k = _CACHE.get(key)
    if k is not None:
        return k
    with _LOCK:
        k = _CACHE.get(key)
        if k is not None:
            return k
        try:
            ctx = _get_context({"truediv": True})
            names, vml = _get_names(expr, ctx)
            types = dict(sig)
            signature = [(n, _get_type(np.empty(0, types[n]))) for n in names]
            compiled = _NumExpr(expr, signature=signature, **ctx)
            k = NumexprKernel(expr, list(names), compiled, vml)
        except (AttributeError, TypeError):  # private API changed: evaluate with local_dict
            names = [n for n, _ in sig]
            local = {n: np.zeros(1, d) for n, d in sig}
            _ne.evaluate(expr, local_dict=local)
            k = NumexprKernel(expr, names, None, False)
        if len(_CACHE) > 4096:
            _CACHE.clear()
        _CACHE[key] = k
        return k
