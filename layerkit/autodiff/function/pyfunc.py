"""Python inside graphs: ``lk.print``, ``lk.py_function`` and ``lk.numpy_function``.

All three are Python-call nodes (``layerkit._core.effects.python_call``): inside an
``lk.function`` they run on every call of the traced function, in program order; outside
one they run right away. ``lk.print`` formats tensors as TensorFlow's ``tf.print`` does
(``[0 1 2 ... 7 8 9]``: the first and last ``summarize`` elements of each dimension,
floats with the fewest of 6/9 (float32) or 15/17 (float64) significant digits that give
the value back, booleans as 1/0).
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.convert import as_dtype, convert_to_tensor
from layerkit._core.effects import python_call
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike
from layerkit._core.variable import Variable
from layerkit.autodiff.tape import GradientTape

__all__ = ["print", "py_function", "numpy_function", "format_tensor"]


# ---- lk.print ---------------------------------------------------------------------------
def _float_text(x: float, dtype: np.dtype) -> str:
    short, full = (15, 17) if dtype == np.float64 else (6, 9)
    text = f"{x:.{short}g}"
    back = np.float64(text) if dtype == np.float64 else np.float32(text)
    if back != x:  # (nan too: the longer form is "nan" again)
        text = f"{x:.{full}g}"
    return text


def _element_text(dtype: np.dtype) -> Callable:
    kind = dtype.kind
    if kind == "b":
        return lambda x: "1" if x else "0"
    if kind in "iu":
        return lambda x: str(int(x))
    if kind == "f":
        dt = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
        return lambda x: _float_text(float(x), dt)
    if kind == "c":
        inner = _element_text(np.dtype(np.float64 if dtype == np.complex128 else np.float32))
        return lambda x: f"({inner(x.real)},{inner(x.imag)})"
    return str


def format_tensor(value, summarize: int | None = 3) -> str:
    """A tensor's text as ``tf.print`` writes it.

    Args:
        value: a Tensor, array or scalar.
        summarize: how many elements to show at each end of every dimension (None: 3;
            -1: all of them).

    Returns:
        The text, e.g. ``'[0 1 2 ... 7 8 9]'`` for ``lk.range(10)``.
    """
    a = np.asarray(value._v if isinstance(value, Tensor) else value)
    text = _element_text(a.dtype)
    if a.ndim == 0:
        return text(a[()])
    n = 3 if summarize is None else int(summarize)
    ends = a.size if n < 0 else min(n, a.size)
    nd = a.ndim

    def spacing(d: int) -> str:
        return " " if d == nd - 1 else "\n" * (nd - d - 1) + " " * (d + 1)

    def dim(sub, d: int) -> str:
        if d == nd:
            return text(sub)
        count = sub.shape[0]
        parts = [dim(sub[i], d + 1) for i in range(min(ends, count))]
        if count > 2 * ends:
            parts.append("...")
        parts.extend(dim(sub[i], d + 1) for i in range(max(ends, count - ends), count))
        return "[" + spacing(d).join(parts) + "]"

    return dim(a, 0)


def _has_tensor(x) -> bool:
    if isinstance(x, Tensor):
        return True
    if isinstance(x, dict):
        return any(_has_tensor(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_has_tensor(v) for v in x)
    return False


def _collect(x, into: list) -> None:
    """The Tensors of ``x`` in the order :func:`_text` consumes their arrays."""
    if isinstance(x, Tensor):
        into.append(x)
    elif isinstance(x, dict):
        for v in x.values():
            _collect(v, into)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _collect(v, into)


def _text(x, arrays, summarize, top: bool) -> str:
    if isinstance(x, Tensor):
        return format_tensor(next(arrays), summarize)
    if not _has_tensor(x):
        return str(x) if top else repr(x)
    if isinstance(x, dict):
        items = ", ".join(f"{k!r}: {_text(v, arrays, summarize, False)}" for k, v in x.items())
        return "{" + items + "}"
    items = [_text(v, arrays, summarize, False) for v in x]
    if isinstance(x, tuple):
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return "[" + ", ".join(items) + "]"


def _writer(output_stream) -> Callable[[str, str], None]:
    if output_stream is None:  # sys.stderr as it is when the text is written
        return lambda text, end: sys.stderr.write(text + end)
    if isinstance(output_stream, str):
        if not output_stream.startswith("file://"):
            raise ValueError(f"lk.print: output_stream must be a stream, a logging function "
                             f"or 'file://<path>', received {output_stream!r}")
        path = output_stream[len("file://"):]

        def append(text: str, end: str) -> None:
            with open(path, "a", encoding="utf-8") as f:
                f.write(text + end)
        return append
    if hasattr(output_stream, "write"):
        return lambda text, end: output_stream.write(text + end)
    if callable(output_stream):  # a logging function (logging.info): one record per call
        return lambda text, end: output_stream(text)
    raise ValueError(f"lk.print: output_stream must be a stream, a logging function or "
                     f"'file://<path>', received {type(output_stream).__name__}")


def print(*inputs: Any, output_stream: Any = None, summarize: int | None = 3, sep: str = " ",
          end: str = "\n", name: str | None = None) -> None:
    """Print ``inputs`` (TensorFlow's ``tf.print``): now when eager, and inside
    ``lk.function`` every time the traced function runs (not when it is traced).

    Tensors are written as ``tf.print`` writes them (see :func:`format_tensor`), strings
    as they are, other Python values with ``str``; lists, tuples and dicts holding
    tensors like Python containers with the tensors' text inside.

    Args:
        *inputs: Tensors, Variables, Python values and containers of them.
        output_stream: where to write: a stream (``sys.stdout``), a logging function
            (``logging.info``) or ``'file://<path>'`` (appended). Default: ``sys.stderr``
            as it is when the text is written.
        summarize: elements shown at each end of every dimension (None: 3; -1: all).
        sep: written between inputs.
        end: written after the last input.
        name: the graph node's name.

    Raises:
        ValueError: ``output_stream`` is none of the above.

    Examples:
        >>> import layerkit as lk, sys
        >>> lk.print("x:", lk.range(10), output_stream=sys.stdout)
        x: [0 1 2 ... 7 8 9]
        >>> lk.print(lk.constant([[1.5, 2.0], [1 / 3, -4.0]]), output_stream=sys.stdout)
        [[1.5 2]
         [0.333333343 -4]]
    """
    write = _writer(output_stream)
    tensors: list = []
    _collect(inputs, tensors)

    def emit(*arrays) -> None:
        it = iter(arrays)
        write(sep.join(_text(x, it, summarize, True) for x in inputs), end)

    if context.RECORDERS and context.tracing():
        # A dry-run trace (get_concrete_function) prints nothing; calls of the graph do.
        dry = [any(getattr(r, "dry_run", False) for r in context.RECORDERS)]

        def node(*arrays) -> None:
            if dry[0]:
                dry[0] = False
                return
            emit(*arrays)

        python_call(node, tensors, name=name or "print")
    else:
        emit(*[t._v for t in tensors])


# ---- lk.py_function / lk.numpy_function ---------------------------------------------------
def _outputs(result, dtypes: list, single: bool, what: str, strict: bool) -> list:
    """``result`` of the callback as one Tensor or array per expected dtype."""
    if not dtypes:
        return []
    values = [result] if single else result
    if not isinstance(values, (list, tuple)) or len(values) != len(dtypes):
        got = "None" if result is None else (
            f"{len(values)} values" if isinstance(values, (list, tuple)) else "1 value")
        raise ValueError(f"{what}: the function returned {got}, expected {len(dtypes)} "
                         f"(one per Tout dtype)")
    out = []
    for k, (v, dt) in enumerate(zip(values, dtypes)):
        if isinstance(v, Variable):  # a snapshot: the variable may change later
            v = v.value()
        have = v.dtype if isinstance(v, (Tensor, np.ndarray, np.generic)) else None
        if strict and have is None:
            have = np.asarray(v).dtype
        if have is not None and have != dt:
            raise ValueError(f"{what}: value {k} returned by the function has dtype "
                             f"{np.dtype(have).name}, expected {dt.name} (Tout)")
        out.append(v if isinstance(v, Tensor) else convert_to_tensor(v, dt))
    return out


def _signature(inp, Tout, what: str):
    if not isinstance(inp, (list, tuple)):
        raise TypeError(f"{what}: inp must be a list or tuple of tensors, received "
                        f"{type(inp).__name__}")
    single = not isinstance(Tout, (list, tuple))
    dtypes = [as_dtype(t) for t in ([Tout] if single else Tout)]
    ins = [x if isinstance(x, Tensor) else convert_to_tensor(x) for x in inp]
    return ins, dtypes, single


def _result(outs: Sequence, single: bool):
    if single:
        return outs[0] if outs else None
    return list(outs)


def py_function(func: Callable, inp: Sequence, Tout: DTypeLike | Sequence[DTypeLike],
                name: str | None = None) -> Tensor | list[Tensor] | None:
    """Run the Python function ``func`` on tensors, also inside ``lk.function``, where
    it runs on every call of the traced function (TensorFlow's ``tf.py_function``).

    ``func`` receives eager Tensors and may run any Python and layerkit code. The result
    has a gradient: ``func``'s own, taken by running it again under a tape.

    Args:
        func: called as ``func(*tensors)``; returns one value per ``Tout`` dtype (one
            value if ``Tout`` is a single dtype, nothing if it is ``[]``).
        inp: the input tensors (a list or tuple).
        Tout: a dtype, or a list of dtypes, of the results.
        name: the graph node's name.

    Returns:
        A Tensor if ``Tout`` is one dtype, else a list of Tensors.

    Raises:
        ValueError: ``func`` returned another number of values, or a tensor of another
            dtype than ``Tout`` says.

    Examples:
        >>> import layerkit as lk
        >>> f = lk.function(lambda x: lk.py_function(lambda a: a * 2.0, [x], "float32"))
        >>> f(lk.constant([1.0, 2.0]))
        Tensor([2. 4.], shape=(2,), dtype=float32)
    """
    what = f"py_function '{name or getattr(func, '__name__', 'func')}'"
    ins, dtypes, single = _signature(inp, Tout, what)
    if not (context.RECORDERS and context.tracing()):
        return _result(_outputs(func(*ins), dtypes, single, what, False), single)

    def run(*arrays) -> list:
        outs = _outputs(func(*[wrap(a) for a in arrays]), dtypes, single, what, False)
        return [t._v for t in outs]

    def grad(gs, xs, ys, needs):
        floats = [x.dtype.kind in "fc" for x in xs]
        seeds = [g if g is not None else wrap(np.zeros(y.shape, y.dtype))
                 for g, y in zip(gs, ys)]

        def run_grad(*arrays) -> list:
            xv = [wrap(a) for a in arrays[:len(xs)]]
            with GradientTape() as tape:
                for x in xv:
                    tape.watch(x)
                outs = _outputs(func(*xv), dtypes, single, what, False)
            pairs = [(o, wrap(s)) for o, s in zip(outs, arrays[len(xs):])
                     if o.dtype.kind in "fc"]
            got = tape.gradient([o for o, _ in pairs], xv,
                                output_gradients=[s for _, s in pairs])
            return [np.zeros(x.shape, x.dtype) if g is None else g._v
                    for x, g in zip(xv, got)]

        res = python_call(run_grad, [*xs, *seeds], name=f"{what} gradient")
        return tuple(r if need and f else None for r, need, f in zip(res, needs, floats))

    return _result(python_call(run, ins, name=name or "py_function", grad=grad), single)


def numpy_function(func: Callable, inp: Sequence, Tout: DTypeLike | Sequence[DTypeLike],
                   stateful: bool = True,
                   name: str | None = None) -> Tensor | list[Tensor] | None:
    """Run the Python function ``func`` on NumPy arrays, also inside ``lk.function``,
    where it runs on every call of the traced function (``tf.numpy_function``).

    ``func`` receives read-only NumPy arrays (a 0-d array for a scalar) and returns
    arrays or Python values. There is no gradient through it (as in TensorFlow).

    Args:
        func: called as ``func(*arrays)``; returns one value per ``Tout`` dtype.
        inp: the input tensors (a list or tuple).
        Tout: a dtype, or a list of dtypes, of the results. Arrays must have exactly
            these dtypes (TensorFlow's rule: ``np.float64`` results for ``float32`` are
            an error, not a cast).
        stateful: accepted for TensorFlow compatibility; the call always runs on every
            call of the traced function.
        name: the graph node's name.

    Returns:
        A Tensor if ``Tout`` is one dtype, else a list of Tensors.

    Raises:
        ValueError: ``func`` returned another number of values or another dtype.

    Examples:
        >>> import layerkit as lk, numpy as np
        >>> lk.numpy_function(np.sort, [lk.constant([3.0, 1.0, 2.0])], "float32")
        Tensor([1. 2. 3.], shape=(3,), dtype=float32)
    """
    what = f"numpy_function '{name or getattr(func, '__name__', 'func')}'"
    ins, dtypes, single = _signature(inp, Tout, what)

    def run(*arrays) -> list:
        views = []
        for a in arrays:
            v = np.asarray(a)
            if v.flags.writeable:  # the graph's own array: the function must not write it
                v = v.view()
                v.flags.writeable = False
            views.append(v)
        outs = [t._v for t in _outputs(func(*views), dtypes, single, what, True)]
        # A result that is (a view of) an input is copied: a Variable's array may change.
        return [o.copy() if isinstance(o, np.ndarray) and any(
            np.may_share_memory(o, v) for v in views) else o for o in outs]

    if not (context.RECORDERS and context.tracing()):
        return _result([wrap(a) for a in run(*[t._v for t in ins])], single)
    return _result(python_call(run, ins, name=name or "numpy_function"), single)
