"""TensorFlow runtime names that layerkit's eager, CPU-only model makes simple.

- ``lk.control_dependencies(...)``, ``lk.group(...)``, ``lk.no_op()``: ops run in program
  order eagerly, and an ``lk.function`` graph keeps the program order of every stateful
  node (assignments, prints, Python calls), so nothing needs forcing: the context manager
  and ``group`` only run what they are given.
- ``lk.version.VERSION``, ``lk.get_logger()``, ``lk.test.is_gpu_available()`` /
  ``is_built_with_cuda()`` / ``gpu_device_name()``, and ``lk.compat.v1.logging``'s
  verbosity calls, which TensorFlow programs make in their first cells.

Examples:
    >>> import layerkit as lk
    >>> v = lk.Variable(1.0)
    >>> with lk.control_dependencies([v.assign_add(1.0)]):
    ...     y = v * 2.0
    >>> float(y), lk.test.is_gpu_available()
    (4.0, False)
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

__all__ = ["control_dependencies", "group", "no_op", "get_logger", "version", "test",
           "compat", "recompute_grad"]


def recompute_grad(f: Any) -> Any:
    """``tf.recompute_grad``: returns ``f``. Recomputing the forward pass during the
    backward one only trades memory for time; the gradients are the same without it."""
    return f


@contextlib.contextmanager
def control_dependencies(control_inputs: Any) -> Iterator[None]:
    """``tf.control_dependencies``: a context manager; the ops it names have already run
    (eagerly) or keep their program order (in a graph), so nothing else is needed."""
    yield


def group(*inputs: Any, name: str | None = None) -> None:
    """``tf.group``: the ops passed in have run; returns None (TensorFlow's no-op)."""
    return None


def no_op(name: str | None = None) -> None:
    """``tf.no_op``: does nothing."""
    return None


def get_logger() -> logging.Logger:
    """The ``'layerkit'`` logger (``tf.get_logger()``)."""
    return logging.getLogger("layerkit")


def _version() -> SimpleNamespace:
    from layerkit import __version__

    return SimpleNamespace(VERSION=__version__, GIT_VERSION="", COMPILER_VERSION="",
                           GRAPH_DEF_VERSION=0)


class _Test:
    """``lk.test``: the device queries of ``tf.test`` (layerkit runs on the CPU)."""

    @staticmethod
    def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None
                         ) -> bool:
        """False: layerkit computes on the CPU."""
        return False

    @staticmethod
    def is_built_with_cuda() -> bool:
        """False: layerkit computes on the CPU."""
        return False

    @staticmethod
    def is_built_with_gpu_support() -> bool:
        """False: layerkit computes on the CPU."""
        return False

    @staticmethod
    def gpu_device_name() -> str:
        """``''``: there is no GPU device."""
        return ""


class _Logging:
    """``tf.compat.v1.logging``'s verbosity calls, on the ``'layerkit'`` logger."""

    DEBUG, INFO, WARN, ERROR, FATAL = (logging.DEBUG, logging.INFO, logging.WARNING,
                                       logging.ERROR, logging.FATAL)
    WARNING = WARN

    @staticmethod
    def set_verbosity(level: int) -> None:
        get_logger().setLevel(level)

    @staticmethod
    def get_verbosity() -> int:
        return get_logger().getEffectiveLevel()


class _V1:
    """``lk.compat.v1``: only its logging calls; TensorFlow 1's graph API (sessions,
    placeholders, ...) is not supported."""

    logging = _Logging()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"lk.compat.v1.{name}: TensorFlow 1 APIs are not supported by "
                             f"layerkit (only lk.compat.v1.logging is); write TensorFlow 2 "
                             f"code (eager ops, lk.function, Keras models)")


class _Compat:
    v1 = _V1()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"lk.compat.{name} is not supported by layerkit (only "
                             f"lk.compat.v1.logging is)")


version = _version()
test = _Test()
compat = _Compat()
