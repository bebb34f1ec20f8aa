"""The CPython-specific speed tricks, in one place, with one off switch.

Each trick below leans on how CPython runs code (reference counts, bytecode, frames)
rather than on anything the language promises. Each is a flag the code that uses it
reads once at import; with the flag off that code takes its plain path, which gives
the same results, only slower. Setting ``LAYERKIT_NO_TRICKS=1`` in the environment
before ``import layerkit`` turns every trick off (read once, here);
``lk.config.tricks_enabled()`` says whether they are on and :data:`ACTIVE` which ones.
CI runs the whole suite once with the tricks off (``.ci/run``).

The figures are from one-process runs on the project's 2-core machine (Python
3.11.7, NumPy 2.4, December 2026, other jobs sharing the cores), each trick switched on
and off in turn 15-25 times; "best" is the fastest round, "typical" the median round.

- :data:`ELIDE` (``primitives/elementwise.py``, Tensor operators): ``x * y + x`` on
  large arrays writes the sum into the buffer of the temporary ``x * y`` when reference
  counts and the calling frame's current instruction show that nothing else can see it
  (what NumPy itself does for arrays). Only on CPython 3.11, whose refcounts and
  ``BINARY_OP`` layout the test was written against. ``x * y + x`` on 4M float32:
  best 3.0 ms with, 3.6 ms without (NumPy arrays: 2.4 ms), typical 7.6 vs 8.2 ms;
  the peak memory of the expression drops from two 16 MB buffers to one. Operands
  below 256 KiB (NumPy's own threshold) are never elided.
- :data:`RECYCLE` (``data/map_fused.py``, the fused batch-first map loop): a Tensor
  wrapper whose reference count shows only the loop holds it is refilled instead of
  made anew. ``from_tensor_slices((x, y)).batch(128).map(fn)`` over (32,) float32 rows,
  per batch: ``fn = lambda a, b: (a, b)`` best 0.45 vs 0.52 us (typical 0.78 vs
  0.85), ``lambda a, b: (a * 2.0, b)`` best 2.13 vs 2.21 us (typical 3.65 vs 3.79).
- :data:`FRAME_WALK` (``data/rng.py``): ``lk.data.element_rng()`` finds the element
  being mapped by walking up the calling frames to the map loop's own frame, so the
  map's loops set nothing per element. Plain path: the loops call the user function
  through a ``KeyedCall`` that sets a thread-local key around each call. Same
  pipelines as above, per batch: identity best 0.45 vs 0.86 us (typical 0.78 vs
  1.43), ``a * 2.0`` best 2.13 vs 2.53 us (typical 3.65 vs 4.20): 15-20% of a cheap
  batch-first pipeline.

Frame inspection that only names a user's line in an error or warning (the tracer's
``user_frame``) is not a trick: it changes no result and costs nothing on a hot path.
"""
from __future__ import annotations

import dis
import os
import sys

import numpy as np

from layerkit._core.tensor import Tensor

#: False when ``LAYERKIT_NO_TRICKS`` is set to anything but "", "0" or "false".
ENABLED = os.environ.get("LAYERKIT_NO_TRICKS", "").strip().lower() in ("", "0", "false")

_CPYTHON = sys.implementation.name == "cpython"

#: Temporary elision in the Tensor operators (CPython 3.11 only).
ELIDE = ENABLED and _CPYTHON and sys.version_info[:2] == (3, 11)
#: Tensor recycling by reference count in the fused map loop.
RECYCLE = ENABLED and _CPYTHON
#: ``element_rng`` finds its element by walking frames (else a thread-local key).
FRAME_WALK = ENABLED and hasattr(sys, "_getframe")

#: Which trick is on, by name.
ACTIVE = {"elide": ELIDE, "recycle": RECYCLE, "frame_walk": FRAME_WALK}


# ---- ELIDE: temporary elision in the Tensor operators ---------------------------------
ELIDE_MIN_BYTES = 1 << 18  # NumPy's own threshold (256 KiB)
_getrefcount = sys.getrefcount


def _no_frames(depth: int = 0):
    raise RuntimeError("this interpreter has no sys._getframe (FRAME_WALK and ELIDE are off)")


_getframe = getattr(sys, "_getframe", _no_frames)
_BINARY_OP = dis.opmap.get("BINARY_OP", -1)
_new = object.__new__


def _from_operator(depth: int) -> bool:
    """True if the frame ``depth`` levels up is running a binary operator instruction.

    The refcounts of a temporary on the operand stack and of a named tensor passed to an
    explicit call (``c.__add__(a)``, whose argument is moved off the stack) are equal, so
    the refcount test alone would reuse a named tensor's buffer; an operator instruction
    in the calling frame tells them apart.
    """
    f = _getframe(depth + 1)
    return f.f_code.co_code[f.f_lasti] == _BINARY_OP


def _elidable(t, out_shape, out_dtype) -> bool:
    # Tensor refs: the caller's operand stack, the operator method's and elide's
    # arguments, getrefcount's argument.
    # Array refs: the Tensor's slot, the local ``a``, getrefcount's arg.
    if type(t) is not Tensor or _getrefcount(t) != 5:
        return False
    a = t._v
    return (type(a) is np.ndarray and a.base is None and a.flags.writeable
            and a.nbytes >= ELIDE_MIN_BYTES and a.shape == out_shape
            and a.dtype == out_dtype and _getrefcount(a) == 3)


def elide(ufunc, x, y):
    """``ufunc(x, y)`` written into a temporary operand's buffer, or None.

    Call it only from a Tensor operator method (``__add__``...) with ``x`` and ``y`` its
    own arguments, holding no other reference to them or their arrays, and only where
    :data:`ELIDE` is true: the reference counts it tests assume exactly that.
    """
    shape = np.broadcast_shapes(x._v.shape, y._v.shape)
    dtype = np.result_type(x._v, y._v)
    target = x if _elidable(x, shape, dtype) else y if _elidable(y, shape, dtype) else None
    if target is None or not _from_operator(2):
        return None
    t = _new(Tensor)
    t._v = ufunc(x._v, y._v, out=target._v)
    target._v = None  # the temporary is dead; make any misuse loud
    return t


# ---- FRAME_WALK: the frame of the map loop running this element -------------------------
def walk_to_key(keyed: dict):
    """``(src, index + offset)`` from the innermost frame of the caller's caller's stack
    whose code object is a key of ``keyed`` (value ``(name of the index local,
    offset)``) and whose locals ``src`` and index are both bound, or None.

    Locals that are unbound mean that frame is pulling its input (an upstream stage's
    function runs then, not this map's): the walk goes further up.
    """
    f = _getframe(2)
    while f is not None:
        where = keyed.get(f.f_code)
        if where is not None:
            loc = f.f_locals
            src, index = loc.get("src"), loc.get(where[0])
            if src is not None and index is not None:
                return src, index + where[1]
        f = f.f_back
    return None
