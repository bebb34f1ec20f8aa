"""AutoGraph (``tf.autograph``): Python ``if``/``while``/``for`` on tensors inside
``lk.function`` become graph control flow.

``lk.function`` converts the Python function it traces (``autograph=True``, the
default): a source-level rewrite (:mod:`.transformer`) turns each ``if``, ``while`` and
``for`` statement into a call that decides at run time (:mod:`.operators`). A condition
or iterable that is a Python value keeps Python semantics (a Python loop unrolls while
tracing); a traced tensor makes the statement an ``lk.cond`` / ``lk.while_loop`` graph
node, so the graph branches and loops on each call's data. ``break``, ``continue`` and
``return`` inside such statements work; ``for`` loops over ``lk.range(n)`` or
``range(n)`` with a traced ``n``, over a traced tensor (its first axis) and over a
``lk.data.Dataset`` become graph loops. User functions called from converted code are
converted too (library code is not). ``print`` stays Python's ``print`` (it runs while
tracing), as in TensorFlow; use ``lk.print`` to print on every call.

Functions whose source is not available (lambdas, builtins, code typed at a REPL) are
traced as written.
"""
from __future__ import annotations

import enum
import types
from collections.abc import Callable
from typing import Any

from layerkit.autograph.transformer import (
    AutoGraphWarning,
    ConversionError,
    convert,
    source_of,
)

__all__ = ["to_graph", "to_code", "do_not_convert", "experimental", "ConversionError",
           "AutoGraphWarning", "set_verbosity", "trace"]

_VERBOSITY = [0]


def set_verbosity(level: int, alsologtostdout: bool = False) -> None:
    """Set AutoGraph's log level (``tf.autograph.set_verbosity``); layerkit logs nothing
    more at higher levels, the value is kept for compatibility.

    Args:
        level: an int >= 0.
        alsologtostdout: accepted for TensorFlow compatibility.
    """
    _VERBOSITY[0] = int(level)


def trace(*args: Any) -> None:
    """Print ``args`` when the code runs in Python, i.e. while tracing inside
    ``lk.function`` (``tf.autograph.trace``); tensors print as ``repr`` shows them.

    Examples:
        >>> import layerkit as lk
        >>> lk.autograph.trace("value", 3)
        value 3
    """
    print(*args)


def to_graph(entity: Callable, recursive: bool = True,
             experimental_optional_features: Any = None) -> Callable:
    """The converted version of a Python function (``tf.autograph.to_graph``).

    The result runs like the original outside ``lk.function`` and converts its control
    flow on tensors into graph control flow when traced.

    Args:
        entity: a Python function or method.
        recursive: accepted for TensorFlow compatibility (calls are always converted
            at run time).
        experimental_optional_features: accepted for TensorFlow compatibility.

    Returns:
        The converted function.

    Raises:
        ConversionError: ``entity`` cannot be converted (no source, not a function).

    Examples:
        >>> import layerkit as lk
        >>> def absolute(x):
        ...     if x > 0:
        ...         return x
        ...     return -x
        >>> f = lk.function(lk.autograph.to_graph(absolute), autograph=False)
        >>> float(f(lk.constant(-2.0))), float(f(lk.constant(3.0)))
        (2.0, 3.0)
    """
    if isinstance(entity, types.MethodType):
        return types.MethodType(convert(entity.__func__, strict=True), entity.__self__)
    fn = getattr(entity, "python_function", entity)
    return convert(fn, strict=True)


def to_code(entity: Callable, recursive: bool = True,
            experimental_optional_features: Any = None) -> str:
    """The Python source AutoGraph generates for a function (``tf.autograph.to_code``).

    Args:
        entity: a Python function or method (or an ``lk.function``).
        recursive, experimental_optional_features: accepted for TensorFlow compatibility.

    Returns:
        The converted function's source code.

    Raises:
        ConversionError: ``entity`` cannot be converted.
    """
    fn = getattr(entity, "__func__", entity)
    fn = getattr(fn, "python_function", fn)
    return source_of(fn)


def do_not_convert(func: Callable | None = None) -> Any:
    """Decorator: AutoGraph leaves ``func`` as written (``tf.autograph.experimental.
    do_not_convert``); inside ``lk.function`` its Python control flow runs at trace time.

    Examples:
        >>> import layerkit as lk
        >>> @lk.autograph.experimental.do_not_convert
        ... def f(x):
        ...     return x * 2
        >>> float(lk.function(f)(lk.constant(2.0)))
        4.0
    """
    if func is None:
        return do_not_convert
    target: Any = getattr(func, "__func__", func)
    try:
        target.__lk_do_not_convert__ = True
    except AttributeError:
        pass
    return func


class Feature(enum.Enum):
    """Optional conversions (``tf.autograph.experimental.Feature``); accepted for
    compatibility, layerkit applies the default set."""

    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


experimental = types.SimpleNamespace(do_not_convert=do_not_convert, Feature=Feature)
