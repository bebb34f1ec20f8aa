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
# Measured with `python benchmarks/bench_function.py --dispatch` on this machine (2-core
# Zen5 shared with other jobs, numexpr 2.14 without VML and 2 threads, NumPy 2.4; medians
# of interleaved runs, one fused region, us per call: inline NumPy ufuncs with reused out=
# buffers / the same ufuncs block-wise / one numexpr expression):
#   float32, 4 arithmetic ops:  16k 11 / 19 / 71      256k 557 / 421 / 755
#                                1M 1806 / 1316 / 2195  4M 11072 / 10247 / 13877
#   float32, 4 ops with tanh/exp: 128k 293 / 400 / 3510   1M 3094 / 2263 / 29021
#   float64, 4 arithmetic ops:  256k 1845 / 849 / 1069   1M 7294 / 4425 / 4942
#                                4M 41949 / 29199 / 27559
#   float64, 8 arithmetic ops:  1M 5775 / 3186 / 6811    4M 95795 / 46343 / 45990
#   float64, 8 ops with tanh/exp: 1M 8503 / 6527 / 22250
# So: numexpr never wins for float32 or for any region with a transcendental (its tanh/exp
# are scalar libm calls here); for float64 arithmetic it only ties or edges out block-wise
# NumPy from about 4M elements. Block-wise NumPy beats whole-array ufuncs from about 256k
# elements (temporaries stay in cache); below that, inline ufuncs with reused buffers win.
NE_MIN_OPS = 4
NE_MIN_SIZE = 1 << 22
BLOCK_MIN_SIZE = 1 << 18
BLOCK_ELEMS = 1 << 14
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
