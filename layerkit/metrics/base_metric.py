"""The metric base class, its state helpers and how its methods become graph nodes.

Metrics are not differentiated, so they run on NumPy values: ``update_state`` accepts
Tensors, arrays or lists and accumulates into non-trainable Variables (the metric's
checkpointable state). ``result()`` returns a float32 Tensor.

Inside ``lk.function`` (a traced train step) ``update_state``, ``result`` and
``reset_state`` of every metric, subclasses included, each become one stateful graph
node (a ``python_call``, see :mod:`layerkit._core.effects`) that runs the method itself
on the call's arrays: the graph re-runs the NumPy update on every call and reads the
state live, instead of freezing what the trace saw. Subclasses need nothing for this
(``Metric.__init_subclass__`` wraps the methods).
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.convert import to_array
from layerkit._core.effects import python_call
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import wrap
from layerkit._core.serialization import init_kwargs
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit._core.variable import Variable, replace_value, writable

EPSILON = 1e-7  # Keras's backend.epsilon(), used for the AUC end thresholds


def _np(x) -> np.ndarray:
    if isinstance(x, Tensor):
        x = x._v
    return x if type(x) is np.ndarray else np.asarray(x)


def _shape_of(x) -> tuple:
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def squeeze_or_expand_to_same_rank(x1: np.ndarray, x2: np.ndarray,
                                   expand_rank_1: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Make ranks equal when they differ by a trailing dimension of size 1 (Keras rule)."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = x2[..., None]
        else:
            x1 = x1[..., 0]
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = x1[..., None]
        else:
            x2 = x2[..., 0]
    return x1, x2


def _samplewise(values: np.ndarray, sample_weight, reduce=np.mean):
    """Per-sample values (``reduce``, Keras's reduce_fn: mean for Mean, sum for Sum, over
    the non-batch axes) weighted like Keras's reduce_to_samplewise_values."""
    values = values.astype(np.float32, copy=False)
    if sample_weight is not None:
        sw = _np(sample_weight).astype(np.float32, copy=False)
        values, sw = squeeze_or_expand_to_same_rank(values, sw)
        if values.ndim > sw.ndim:
            values = reduce(values, axis=tuple(range(sw.ndim, values.ndim)))
        try:
            sw = np.broadcast_to(sw, values.shape)
        except ValueError:
            raise ValueError(
                f"sample_weight of shape {sw.shape} cannot be broadcast to the metric values' "
                f"shape {values.shape}"
            ) from None
        values = values * sw
        if sw.ndim > 1:
            sw = reduce(sw, axis=tuple(range(1, sw.ndim)))
    else:
        sw = None
    if values.ndim > 1:
        values = reduce(values, axis=tuple(range(1, values.ndim)))
    return values, sw


# ---- metric methods as graph nodes (inside lk.function) -----------------------------------


class _MethodCall:
    """A metric method run by a Python-call node: the method and its non-tensor arguments
    (``slots``: where the node's input tensors go in the flattened arguments)."""

    __slots__ = ("metric", "fn", "structure", "leaves", "slots", "flat", "out_structure",
                 "masked")

    def __init__(self, metric, fn, structure=None, leaves=(), slots=(), masked=()) -> None:
        self.metric, self.fn = metric, fn
        self.structure, self.leaves, self.slots = structure, list(leaves), tuple(slots)
        self.masked = tuple(masked)  # slots whose tensors carry a Keras mask (after them)
        for i in self.slots:
            self.leaves[i] = None  # filled per call; do not keep the trace's tensors
        self.out_structure = None
        # The common call, update_state(a, b, sample_weight=...) with tensors as direct
        # arguments, is rebuilt without the generic pack_like (it runs on every step).
        self.flat = None
        if structure is not None:
            args, kwargs = structure
            if len(leaves) == len(args) + len(kwargs) and not any(
                    isinstance(v, (list, tuple, dict)) for v in (*args, *kwargs.values())):
                self.flat = (len(args), sorted(kwargs, key=repr))  # flatten's order

    def args(self, arrays: tuple):
        leaves = list(self.leaves)
        for i, a in zip(self.slots, arrays):
            leaves[i] = wrap(a)
        for i, m in zip(self.masked, arrays[len(self.slots):]):
            leaves[i]._keras_mask = wrap(m)
        if self.flat is not None:
            n, names = self.flat
            return leaves[:n], dict(zip(names, leaves[n:]))
        return pack_like(self.structure, leaves)

    def update(self, *arrays) -> None:
        args, kwargs = self.args(arrays)
        self.fn(self.metric, *args, **kwargs)

    def result(self) -> tuple:
        r = self.fn(self.metric)
        self.out_structure = r
        return tuple(to_array(x) for x in flatten(r))


def _tracing() -> bool:
    return bool(context.RECORDERS) and context.tracing()


def _graph_aware(fn, kind: str):
    """Wrap a metric method so that, while an lk.function traces, it is one graph node
    (a Python call: see ``layerkit._core.effects``)."""
    if kind == "result":
        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            if args or kwargs or not _tracing():
                return fn(self, *args, **kwargs)
            # Reads the state live, on every call (never merged with another read).
            call = _MethodCall(self, fn)
            outs = python_call(call.result, name=f"{self.name}.{fn.__name__}")
            return pack_like(call.out_structure, list(outs))
    else:
        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            if not _tracing():
                return fn(self, *args, **kwargs)
            structure = (args, kwargs)
            leaves = flatten(structure)
            slots = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
            tensors = [leaves[i] for i in slots]
            # Keras masks travel with their tensors into the node (y_pred's mask).
            masks = [(i, getattr(leaves[i], "_keras_mask", None)) for i in slots]
            masks = [(i, m) for i, m in masks if m is not None]
            call = _MethodCall(self, fn, structure, leaves, slots, [i for i, _ in masks])
            python_call(call.update, [*tensors, *[m for _, m in masks]],
                        name=f"{self.name}.{fn.__name__}", updates=self.variables)
            return None
    method._lk_graph_aware = True
    return method


class Metric:
    """Base class of stateful metrics.

    Subclasses create state with :meth:`add_variable` in ``__init__`` and implement
    ``update_state(...)`` and ``result()``. Calling a metric updates it and returns the
    result.

    Args:
        name: the metric's name (default: the class name in snake case).
        dtype: the result dtype (float32).
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for kind in ("update_state", "result", "reset_state"):
            fn = cls.__dict__.get(kind)
            if callable(fn) and not getattr(fn, "_lk_graph_aware", False):
                setattr(cls, kind, _graph_aware(fn, kind))

    def __init__(self, name: str | None = None, dtype: DTypeLike = None) -> None:
        self.name = name or _snake(type(self).__name__)
        self.dtype = np.dtype(dtype or "float32")
        self._vars: dict[str, Variable] = {}

    def add_variable(self, shape: Sequence[int], initializer: str = "zeros",
                     dtype: DTypeLike = None, name: str | None = None) -> Variable:
        """Create a non-trainable state Variable (zeros) tracked by this metric."""
        name = name or f"variable_{len(self._vars)}"
        v = Variable(np.zeros(shape, dtype or self.dtype), trainable=False,
                     name=f"{self.name}/{name}")
        self._vars[name] = v
        return v

    @property
    def variables(self) -> list:
        return list(self._vars.values())

    def reset_states(self) -> None:
        """``reset_state()`` under its tf.keras 2 name (TensorFlow tutorials still call it)."""
        self.reset_state()

    def reset_state(self) -> None:
        """Zero every state variable."""
        for v in self._vars.values():
            replace_value(v, np.zeros_like(v._v))

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")

    def result(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement result")

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()

    def _checkpoint_variables(self) -> dict:
        return dict(self._vars)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.name}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        """A metric (with fresh state) from :meth:`get_config` output (Keras's too)."""
        return cls(**init_kwargs(cls, config))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


Metric.reset_state = _graph_aware(Metric.reset_state, "reset_state")


def _acc(var: Variable, value) -> None:
    a = writable(var)[0]  # a tape holding ops that read var keeps the value they read
    np.add(a, value, out=a, casting="unsafe")



def _public(fn: Callable, name: str, doc: str) -> Callable[..., Tensor]:
    def metric_fn(y_true: TensorLike, y_pred: TensorLike, **kwargs: Any) -> Tensor:
        return wrap(np.asarray(fn(_np(y_true), _np(y_pred), **kwargs)))

    metric_fn.__name__ = metric_fn.__qualname__ = name
    metric_fn.__module__ = "layerkit.metrics"  # its public home
    metric_fn.__doc__ = doc
    return metric_fn


