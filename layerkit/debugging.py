"""``lk.debugging``: TensorFlow's run-time assertions (``tf.debugging``).

Each assertion checks NumPy values and raises :class:`lk.errors.InvalidArgumentError`
(a ``ValueError``) naming the assertion, the condition and the values that broke it.
Eagerly it checks at once; inside ``lk.function`` it becomes a graph node that checks on
every call (through :func:`layerkit._core.effects.python_call`, as ``lk.print`` does).
They return None, as in TensorFlow 2; ``check_numerics`` returns its input.

Examples:
    >>> import layerkit as lk
    >>> lk.debugging.assert_equal(lk.constant([1, 2]), [1, 2])
    >>> try:
    ...     lk.debugging.assert_less(lk.constant([1, 5]), 3)
    ... except lk.errors.InvalidArgumentError as e:
    ...     print(str(e).splitlines()[0])
    assert_less: condition x < y did not hold for 1 of 2 element(s)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerkit import errors
from layerkit._core.effects import python_call

__all__ = ["assert_equal", "assert_none_equal", "assert_near", "assert_less",
           "assert_less_equal", "assert_greater", "assert_greater_equal", "assert_positive",
           "assert_negative", "assert_non_negative", "assert_non_positive", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_shapes", "assert_type",
           "assert_all_finite", "check_numerics", "assert_proper_iterable", "Assert",
           "is_numeric_tensor", "set_log_device_placement", "enable_check_numerics",
           "disable_check_numerics", "assert_integer", "assert_scalar"]


def _fail(what: str, message: str | None, detail: str, summarize: int | None = None,
          values: Sequence = ()) -> None:
    n = 3 if summarize is None else summarize
    shown = "; ".join(f"{name} = {np.asarray(v).ravel()[:n].tolist()}"
                      f"{' ...' if np.size(v) > n else ''}" for name, v in values)
    text = f"{what}: {detail}" + (f"\n{message}" if message else "") \
        + (f"\n{shown}" if shown else "")
    raise errors.InvalidArgumentError(None, None, text)


def _run(name: str, check: Callable, inputs: Sequence) -> None:
    python_call(check, list(inputs), name=name)


def _compare(what: str, symbol: str, ufunc: Callable) -> Callable:
    def assertion(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
                  name: str | None = None) -> None:
        def check(a, b):
            try:
                ok = ufunc(a, b)
            except ValueError as e:  # shapes that do not broadcast
                _fail(what, message, f"x and y do not broadcast: {e}")
            if not np.all(ok):
                bad = int(np.size(ok) - np.count_nonzero(ok))
                _fail(what, message, f"condition x {symbol} y did not hold for {bad} of "
                      f"{np.size(ok)} element(s)", summarize, (("x", a), ("y", b)))
        _run(what, check, (x, y))
    assertion.__name__ = assertion.__qualname__ = what
    assertion.__doc__ = (f"Raise InvalidArgumentError unless ``x {symbol} y`` holds for every "
                         f"element (NumPy broadcasting; ``tf.debugging.{what}``).")
    return assertion


assert_equal = _compare("assert_equal", "==", np.equal)
assert_none_equal = _compare("assert_none_equal", "!=", np.not_equal)
assert_less = _compare("assert_less", "<", np.less)
assert_less_equal = _compare("assert_less_equal", "<=", np.less_equal)
assert_greater = _compare("assert_greater", ">", np.greater)
assert_greater_equal = _compare("assert_greater_equal", ">=", np.greater_equal)


def _sign(what: str, symbol: str, test: Callable) -> Callable:
    def assertion(x: Any, message: str | None = None, summarize: int | None = None,
                  name: str | None = None) -> None:
        def check(a):
            ok = test(np.asarray(a))
            if not np.all(ok):
                bad = int(np.size(ok) - np.count_nonzero(ok))
                _fail(what, message, f"condition x {symbol} 0 did not hold for {bad} of "
                      f"{np.size(ok)} element(s)", summarize, (("x", a),))
        _run(what, check, (x,))
    assertion.__name__ = assertion.__qualname__ = what
    assertion.__doc__ = (f"Raise InvalidArgumentError unless ``x {symbol} 0`` for every element "
                         f"(``tf.debugging.{what}``).")
    return assertion


assert_positive = _sign("assert_positive", ">", lambda a: a > 0)
assert_negative = _sign("assert_negative", "<", lambda a: a < 0)
assert_non_negative = _sign("assert_non_negative", ">=", lambda a: a >= 0)
assert_non_positive = _sign("assert_non_positive", "<=", lambda a: a <= 0)


def assert_near(x: Any, y: Any, rtol: float | None = None, atol: float | None = None,
                message: str | None = None, summarize: int | None = None,
                name: str | None = None) -> None:
    """Raise InvalidArgumentError unless ``|x - y| <= atol + rtol * |y|`` everywhere.

    The default tolerances are TensorFlow's: ``10 * eps`` of the dtype for both.
    """
    def check(a, b):
        a, b = np.asarray(a), np.asarray(b)
        dt = np.result_type(a, b)
        eps = np.finfo(dt).eps if np.issubdtype(dt, np.inexact) else 0.0
        rt = 10 * eps if rtol is None else rtol
        at = 10 * eps if atol is None else atol
        ok = np.abs(a - b) <= at + rt * np.abs(b)
        if not np.all(ok):
            worst = float(np.max(np.abs(a - b)))
            _fail("assert_near", message, f"x and y differ by up to {worst:g} (atol={at:g}, "
                  f"rtol={rt:g})", summarize, (("x", a), ("y", b)))
    _run("assert_near", check, (x, y))


def _rank_of(x: Any) -> int:
    return len(np.shape(x)) if not hasattr(x, "shape") else len(x.shape)


def assert_rank(x: Any, rank: int, message: str | None = None,
                name: str | None = None) -> None:
    """Raise ValueError unless ``x`` has rank ``rank`` (checked on the static shape)."""
    if _rank_of(x) != int(rank):
        _fail("assert_rank", message, f"expected rank {int(rank)}, received shape "
              f"{tuple(np.shape(x))} (rank {_rank_of(x)})")


def assert_rank_at_least(x: Any, rank: int, message: str | None = None,
                         name: str | None = None) -> None:
    """Raise ValueError unless ``x`` has rank ``>= rank``."""
    if _rank_of(x) < int(rank):
        _fail("assert_rank_at_least", message, f"expected rank >= {int(rank)}, received "
              f"shape {tuple(np.shape(x))}")


def assert_rank_in(x: Any, ranks: Sequence[int], message: str | None = None,
                   name: str | None = None) -> None:
    """Raise ValueError unless the rank of ``x`` is one of ``ranks``."""
    if _rank_of(x) not in [int(r) for r in ranks]:
        _fail("assert_rank_in", message, f"expected a rank in {list(ranks)}, received shape "
              f"{tuple(np.shape(x))}")


def assert_scalar(tensor: Any, message: str | None = None, name: str | None = None) -> None:
    """Raise ValueError unless ``tensor`` is a scalar (rank 0)."""
    assert_rank(tensor, 0, message)


def assert_shapes(shapes: Any, data: Any = None, summarize: int | None = None,
                  message: str | None = None, name: str | None = None) -> None:
    """Check shapes against symbolic dimension names, as ``tf.debugging.assert_shapes``.

    ``shapes`` is a list of ``(tensor, spec)`` pairs (or a dict); each spec is a sequence
    whose entries are ints (that size), strings (a named size that must agree across
    every tensor) or ``None`` (any size); a leading ``'...'`` entry allows any number of
    outer dimensions. A spec of ``()`` means a scalar.

    >>> import layerkit as lk
    >>> lk.debugging.assert_shapes([(lk.ones((2, 3)), ('N', 'D')), (lk.ones(2), ('N',))])
    """
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    sizes: dict = {}
    for i, (t, spec) in enumerate(pairs):
        shape = tuple(np.shape(t)) if not hasattr(t, "shape") else tuple(t.shape)
        spec = tuple(spec) if not isinstance(spec, str) else (spec,)
        if spec[:1] in (("...",), ("*",)):
            spec = spec[1:]
            if len(shape) < len(spec):
                _fail("assert_shapes", message, f"tensor {i} of shape {shape} has fewer "
                      f"than {len(spec)} dimensions required by {spec}")
            shape = shape[len(shape) - len(spec):]
        elif len(shape) != len(spec):
            _fail("assert_shapes", message, f"tensor {i} has shape {shape} (rank "
                  f"{len(shape)}); expected rank {len(spec)} for the spec {tuple(spec)}")
        for d, s in zip(shape, spec):
            if s is None or d is None:
                continue
            if isinstance(s, str):
                if sizes.setdefault(s, d) != d:
                    _fail("assert_shapes", message, f"dimension {s!r} is {sizes[s]} in an "
                          f"earlier tensor but {d} in tensor {i} (shape {shape})")
            elif int(s) != d:
                _fail("assert_shapes", message, f"tensor {i} has shape {shape}; expected "
                      f"{tuple(spec)}")


def assert_type(tensor: Any, tf_type: Any, message: str | None = None,
                name: str | None = None) -> None:
    """Raise TypeError unless ``tensor``'s dtype is ``tf_type``."""
    if np.dtype(tensor.dtype) != np.dtype(tf_type):
        raise TypeError(f"assert_type: expected dtype {np.dtype(tf_type)}, received "
                        f"{np.dtype(tensor.dtype)}" + (f"\n{message}" if message else ""))


def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> None:
    """Raise TypeError unless ``x`` has an integer dtype."""
    if not np.issubdtype(np.dtype(getattr(x, "dtype", np.asarray(x).dtype)), np.integer):
        raise TypeError(f"assert_integer: expected an integer dtype, received "
                        f"{getattr(x, 'dtype', np.asarray(x).dtype)}"
                        + (f"\n{message}" if message else ""))


def assert_all_finite(t: Any, message: str, name: str | None = None) -> Any:
    """``check_numerics`` under its other TensorFlow name."""
    return check_numerics(t, message, name)


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Any:
    """Return ``tensor``; raise InvalidArgumentError if it holds a NaN or an infinity."""
    def check(a):
        a = np.asarray(a)
        if np.issubdtype(a.dtype, np.inexact) and not np.all(np.isfinite(a)):
            kinds = [k for k, f in (("NaN", np.isnan), ("Inf", np.isinf)) if np.any(f(a))]
            _fail("check_numerics", message, f"tensor had {' and '.join(kinds)} values")
    _run("check_numerics", check, (tensor,))
    return tensor


def Assert(condition: Any, data: Sequence, summarize: int | None = None,  # noqa: N802
           name: str | None = None) -> None:
    """Raise InvalidArgumentError when ``condition`` is False, showing ``data``."""
    def check(c, *values):
        if not np.all(c):
            _fail("Assert", None, "assertion failed", summarize,
                  [(f"data[{i}]", v) for i, v in enumerate(values)])
    _run("Assert", check, (condition, *[d for d in data if not isinstance(d, str)]))


def assert_proper_iterable(values: Any) -> None:
    """Raise TypeError if ``values`` is a tensor, array or string rather than an iterable."""
    if isinstance(values, (str, bytes, np.ndarray)) or hasattr(values, "_rv"):
        raise TypeError(f"assert_proper_iterable: expected a list/tuple/generator, received "
                        f"{type(values).__name__}")
    iter(values)


def is_numeric_tensor(tensor: Any) -> bool:
    """True for a Tensor whose dtype is a number type (bool is not)."""
    dt = getattr(tensor, "dtype", None)
    return hasattr(tensor, "_rv") and dt is not None and np.dtype(dt).kind in "iufc"


def set_log_device_placement(enabled: bool) -> None:
    """Accepted for TensorFlow compatibility: layerkit runs every op on the CPU."""


def enable_check_numerics(stack_height_limit: int = 30, path_length_limit: int = 50) -> None:
    """Accepted for TensorFlow compatibility; use :func:`check_numerics` on the tensors
    to watch (layerkit does not instrument every op)."""


def disable_check_numerics() -> None:
    """Accepted for TensorFlow compatibility (see :func:`enable_check_numerics`)."""
