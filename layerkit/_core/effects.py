"""Python side effects as stateful graph nodes: the one mechanism for Python code that
must run on every call of an ``lk.function``.

Tracing records lk ops; plain Python (printing, a metric's bookkeeping, an optimizer's
in-place NumPy kernels, a user's callback) would otherwise run once, at trace time.
:func:`python_call` makes such code one node of the graph: the node's forward calls the
Python function on the input arrays, on every call, in program order, never folded,
merged or removed. Outside a trace it simply runs. Metric methods, optimizer updates,
``lk.print``, ``lk.py_function`` and ``lk.numpy_function`` are built on it; random ops
are plain records flagged ``stateful`` (their forward draws from a generator).

A node says which Variables it changes (``updates``): a graph then copies a read of one
that is still used after the node (it may be updated in place), and a tracer re-reads
it after the node instead of reusing the read made before.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from layerkit._core import context
from layerkit._core.op import Op, apply
from layerkit._core.types import TensorLike


class PythonCall:
    """The static attribute of a Python-call node: the function, its name, the
    Variables it changes and an optional gradient (see :func:`python_call`)."""

    __slots__ = ("fn", "name", "updates", "grad")

    def __init__(self, fn: Callable, name: str, updates=(), grad: Callable | None = None):
        self.fn = fn
        self.name = name
        self.updates = updates
        self.grad = grad

    def changed(self) -> list:
        """The Variables this node changes."""
        u = self.updates
        return list(u() if callable(u) else u)

    def __repr__(self) -> str:
        return f"<{self.name}>"


def _forward(*arrays, call: PythonCall) -> tuple:
    if context.RECORDERS:  # the lk ops the function runs belong to this node, not the graph
        with context.untraced():
            out = call.fn(*arrays)
    else:
        out = call.fn(*arrays)
    if out is None:
        return ()
    if not isinstance(out, (list, tuple)):
        raise TypeError(f"python_call '{call.name}': the function must return None or a "
                        f"list/tuple of arrays, received {type(out).__name__}")
    return tuple(out)


def _vjp(g, ins, out, needs, call: PythonCall):
    return call.grad(g, ins, out, needs)


_vjp.takes_none = True  # outputs nobody used reach ``grad`` as None


def _changed(attrs: dict) -> list:
    return attrs["call"].changed()


# Two records, so that tapes skip the calls without a gradient (no vjp: not recorded).
PYTHON_CALL = Op("python_call", _forward, num_outputs=-1, stateful=True, updates=_changed)
PYTHON_CALL_GRAD = Op("python_call", _forward, _vjp, num_outputs=-1, stateful=True,
                      updates=_changed)


def python_call(fn: Callable, inputs: Sequence = (), *, name: str = "python_call",
                updates: TensorLike = (), grad: Callable | None = None) -> tuple:
    """Run ``fn`` on the arrays of ``inputs`` as one stateful node of the graph being
    traced (on every call of the ``lk.function``), or right away outside a trace.

    Args:
        fn: called as ``fn(*arrays)`` with one NumPy array (or Python scalar) per input;
            returns None or a sequence of arrays, the node's outputs. lk ops it runs are
            not traced (they run when the node runs).
        inputs: Tensors (or values convertible to them) whose arrays ``fn`` receives.
        name: the node's name in graph printouts and error messages.
        updates: the Variables ``fn`` changes (a sequence, or a callable returning one).
        grad: optional ``grad(output_grads, input_tensors, output_tensors, needs)``
            returning one gradient Tensor (or None) per input, written with lk ops
            (``output_grads`` is a tuple with None for outputs nobody used).

    Returns:
        A tuple of Tensors, one per array ``fn`` returned.

    Examples:
        >>> import layerkit as lk
        >>> seen = []
        >>> f = lk.function(lambda x: python_call(lambda a: seen.append(a.sum()), [x]))
        >>> _ = f(lk.constant([1.0, 2.0])); _ = f(lk.constant([3.0, 4.0]))
        >>> [float(s) for s in seen]
        [3.0, 7.0]
    """
    call = PythonCall(fn, name, updates, grad)
    if context.RECORDERS and updates:
        for r in tuple(context.RECORDERS):  # a dry-run trace keeps their values to restore
            hook = getattr(r, "record_update", None)
            if hook is not None:
                hook(call.changed())
    return apply(PYTHON_CALL if grad is None else PYTHON_CALL_GRAD, *inputs, call=call)
