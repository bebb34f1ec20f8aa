"""The one place global state lives: the stack of active recorders.

Tapes, the variable watcher of ``custom_gradient`` and graph tracers push themselves
here. The eager hot path reads ``RECORDERS`` once: an empty list means "just compute".
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

# Active recorders, innermost last. Each has ``record(op, inputs, outputs, attrs)`` and
# ``read_variable(var)``.
RECORDERS: list = []

# ``[True]`` after ``lk.config.run_functions_eagerly(True)``: ``lk.function`` calls run
# the Python function eagerly instead of a traced graph.
FUNCTIONS_EAGERLY: list = [False]


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


def traced(t) -> bool:
    """True if ``t`` is a value recorded by an active ``lk.function`` trace."""
    return any(getattr(r, "tracing", False) and id(t) in r.ids for r in RECORDERS)


def dynamic_dims(t) -> tuple | None:
    """For a tensor of an active trace with ``None`` input dimensions: per-dimension
    flags of the dimensions that vary with them (None if none do)."""
    for r in RECORDERS:
        f = getattr(r, "dynamic_dims", None)
        if f is not None:
            d = f(t)
            if d is not None:
                return d
    return None


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

    Examples:
        >>> import layerkit as lk
        >>> lk.executing_eagerly()
        True
        >>> bool(lk.function(lambda: lk.constant(lk.executing_eagerly()))())
        False
    """
    return not tracing()


# ---- name scopes (TensorFlow's tf.name_scope; names only, no graph) ---------------------
_LOCAL = threading.local()


def get_current_name_scope() -> str:
    """The full name of the innermost open :class:`name_scope` (``''`` at top level)."""
    stack = getattr(_LOCAL, "scopes", None)
    return stack[-1] if stack else ""


class name_scope:
    """Context manager that opens a name scope, as ``tf.name_scope``.

    Scopes nest: inside ``name_scope('a')``, ``name_scope('b')`` is ``'a/b'``. Entering
    returns the scope's full name with a trailing ``/``; a name that ends in ``/`` is
    taken as a full name (it re-enters that scope, as TensorFlow does), and ``''``
    returns to the top level. layerkit has no graph ops to name: scopes are read by
    :func:`get_current_name_scope` and by ``lk.Module.name_scope``.

    Args:
        name: the scope's name.

    Raises:
        ValueError: ``name`` is not a string.

    Examples:
        >>> import layerkit as lk
        >>> with lk.name_scope("outer"):
        ...     with lk.name_scope("inner") as scope:
        ...         print(scope, lk.get_current_name_scope())
        outer/inner/ outer/inner
    """

    __slots__ = ("_name", "_entered")

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise ValueError(f"name_scope: name must be a string, received "
                             f"{type(name).__name__} {name!r}")
        self._name = name
        self._entered: list = []

    @classmethod
    def absolute(cls, name: str) -> name_scope:
        """The scope ``name`` inside the currently open scopes, fixed now: entering it
        later re-enters that full name wherever it is entered (``Module.name_scope``)."""
        current = get_current_name_scope()
        return cls(f"{current}/{name}/" if current else f"{name}/")

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        name = self._name
        if not name:
            full = ""
        elif name.endswith("/"):
            full = name[:-1]
        else:
            current = get_current_name_scope()
            full = f"{current}/{name}" if current else name
        stack = getattr(_LOCAL, "scopes", None)
        if stack is None:
            stack = _LOCAL.scopes = []
        stack.append(full)
        self._entered.append(len(stack))
        return f"{full}/" if full else ""

    def __exit__(self, *exc) -> None:
        depth = self._entered.pop()
        del _LOCAL.scopes[depth - 1:]


@contextmanager
def init_scope() -> Iterator[None]:
    """Run the block outside every tape and ``lk.function`` trace, as ``tf.init_scope``.

    Ops in the block run eagerly and are recorded by no tape and no tracer: inside an
    ``lk.function`` they run once, while tracing, and their results are constants of
    the traced function (the place to create Variables or read configuration). Name
    scopes stay as they are.

    Examples:
        >>> import layerkit as lk
        >>> x = lk.constant(3.0)
        >>> with lk.GradientTape() as tape:
        ...     tape.watch(x)
        ...     with lk.init_scope():
        ...         y = x * x  # not recorded
        >>> print(tape.gradient(y, x))
        None
    """
    saved = RECORDERS[:]
    RECORDERS.clear()
    try:
        yield
    finally:
        RECORDERS[:0] = saved
