"""The one place global state lives: the stack of active recorders.

Tapes, the variable watcher of ``custom_gradient`` and graph tracers push themselves
here. The eager hot path reads ``RECORDERS`` once: an empty list means "just compute".
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

# Active recorders, innermost last. Each has ``record(op, inputs, outputs, attrs)`` and
# ``read_variable(var)``.
RECORDERS: list = []


def push(recorder) -> None:
    RECORDERS.append(recorder)


def pop(recorder) -> None:
    # Remove the most recent occurrence; tapes may exit out of order.
    for i in range(len(RECORDERS) - 1, -1, -1):
        if RECORDERS[i] is recorder:
            del RECORDERS[i]
            return


@contextmanager
def paused(recorder) -> Iterator[None]:
    """Temporarily stop ``recorder`` from recording (it keeps its place in the stack)."""
    idx = None
    for i in range(len(RECORDERS) - 1, -1, -1):
        if RECORDERS[i] is recorder:
            idx = i
            break
    if idx is None:
        yield
        return
    del RECORDERS[idx]
    try:
        yield
    finally:
        RECORDERS.insert(min(idx, len(RECORDERS)), recorder)


def tracing() -> bool:
    """True while an ``lk.function`` trace is recording (ops may skip value checks)."""
    return any(getattr(r, "tracing", False) for r in RECORDERS)


@contextmanager
def untraced() -> Iterator[None]:
    """Pause every active ``lk.function`` tracer (tapes keep recording).

    For Python code run inside a stateful record's forward (a metric update, a learning
    rate callable): the lk ops it uses belong to that node, not to the traced graph.
    """
    tracers = [r for r in RECORDERS if getattr(r, "tracing", False)]
    if not tracers:
        yield
        return
    with ExitStack() as stack:
        for r in tracers:
            stack.enter_context(paused(r))
        yield


def executing_eagerly() -> bool:
    """False while an ``lk.function`` is being traced, True otherwise (TensorFlow's
    ``tf.executing_eagerly``; a traced function's Python body runs only while tracing).

    Example:
        >>> import layerkit as lk
        >>> lk.executing_eagerly()
        True
        >>> bool(lk.function(lambda: lk.constant(lk.executing_eagerly()))())
        False
    """
    return not tracing()
