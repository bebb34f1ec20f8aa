"""The functional API: ``lk.Input`` and the layer graph a functional ``lk.Model`` replays.

``inputs = lk.Input(shape=(64,)); outputs = Dense(10)(Dense(32)(inputs))`` builds the
layers and records each call as a :class:`~layerkit.layers.symbolic.Node` on the
resulting SymbolicTensors. ``lk.Model(inputs, outputs)`` walks those nodes back from the
outputs once, orders them topologically, and :meth:`Graph.run` replays them on real
tensors: one layer call per node.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from layerkit._core.nest import flatten, pack_sequence_as
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, ShapeLike
from layerkit.layers.backend_config import floatx
from layerkit.layers.layer import set_keras_mask
from layerkit.layers.symbolic import SymbolicTensor, map_structure

__all__ = ["Input", "Graph"]

_INPUT_UIDS = [0]


def Input(shape: int | ShapeLike | None = None, batch_size: int | None = None,
          dtype: DTypeLike = None, sparse: bool | None = None,
          batch_shape: ShapeLike | None = None, name: str | None = None,
          tensor: Any = None) -> SymbolicTensor:
    """A symbolic graph input for the functional API.

    Args:
        shape: the shape of one sample (without the batch axis); None entries are
            unknown sizes.
        batch_size: optional fixed batch size.
        dtype: the dtype (default ``lk.keras.backend.floatx()``, float32 unless set).
        sparse: unsupported; must be None or False.
        batch_shape: the full shape including the batch axis (instead of ``shape``).
        name: the input's name (used to match dict inputs); default ``input_layer``,
            ``input_layer_1``, ...
        tensor: unsupported; must be None.

    Returns:
        A :class:`~layerkit.layers.SymbolicTensor` with shape ``(batch_size, *shape)``.

    Raises:
        ValueError: neither or both of ``shape`` and ``batch_shape``, or unsupported args.

    Examples:
        >>> import layerkit as lk
        >>> lk.Input(shape=(28, 28, 1)).shape
        (None, 28, 28, 1)
    """
    if sparse:
        raise ValueError("Input: sparse inputs are not supported")
    if tensor is not None:
        raise ValueError("Input: the `tensor` argument is not supported")
    if shape is None and batch_shape is None:
        raise ValueError("Input: pass shape=(...) (without the batch axis) or batch_shape")
    if shape is not None and batch_shape is not None:
        raise ValueError("Input: pass only one of shape and batch_shape")
    if batch_shape is None:
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        assert shape is not None  # (one of shape and batch_shape is set, checked above)
        batch_shape = (batch_size,) + tuple(shape)
    for d in batch_shape:
        if d is not None and (not isinstance(d, (int, np.integer)) or d < 0):
            raise ValueError(f"Input: dimensions must be non-negative ints or None, received "
                             f"shape {tuple(batch_shape)}")
    if name is None:
        n = _INPUT_UIDS[0]
        _INPUT_UIDS[0] += 1
        name = "input_layer" if n == 0 else f"input_layer_{n}"
    return SymbolicTensor(batch_shape, dtype or floatx(), name=name)


def _check_symbolic(struct, what: str) -> list:
    flat = flatten(struct)
    if not flat:
        raise ValueError(f"Model: {what} is empty")
    for t in flat:
        if not isinstance(t, SymbolicTensor):
            raise TypeError(
                f"Model: all {what} must be symbolic tensors (from lk.Input or layer calls on "
                f"them); received {type(t).__name__}"
            )
    return flat


class Graph:
    """The nodes between functional inputs and outputs, in execution order.

    Args:
        inputs: a SymbolicTensor, or a list/tuple/dict of them (from ``lk.Input``).
        outputs: SymbolicTensor(s) computed from the inputs.

    Raises:
        ValueError: an output does not depend on the given inputs only.
    """

    def __init__(self, inputs, outputs, model_name: str = "functional") -> None:
        self.model_name = model_name
        self.inputs = inputs
        self.outputs = outputs
        self.flat_inputs = _check_symbolic(inputs, "inputs")
        self.flat_outputs = _check_symbolic(outputs, "outputs")
        for t in self.flat_inputs:
            if t.node is not None:
                raise ValueError(
                    f"Model: inputs must be lk.Input tensors; received the output of layer "
                    f"'{t.layer.name}'"
                )
        self.input_names = [t.name or f"input_{i}" for i, t in enumerate(self.flat_inputs)]
        self.nodes = self._toposort()
        seen, layers = set(), []
        for node in self.nodes:
            if id(node.layer) not in seen:
                seen.add(id(node.layer))
                layers.append(node.layer)
        self.layers = layers
        names = [t.layer.name if t.layer is not None else t.name for t in self.flat_outputs]
        self.output_names = names if len(set(names)) == len(names) else \
            [f"{n}_{i}" for i, n in enumerate(names)]

    def _toposort(self) -> list:
        known_inputs = {id(t) for t in self.flat_inputs}
        order: list = []
        state: dict = {}  # state: 1 = on the stack, 2 = done
        stack = [(t, False) for t in reversed(self.flat_outputs)]
        while stack:
            t, expanded = stack.pop()
            if id(t) in known_inputs:
                continue
            node = t.node
            if node is None:
                raise ValueError(
                    f"Model: output depends on input '{t.name}' (shape {t.shape}), which is not "
                    f"among the model's inputs {[x.name for x in self.flat_inputs]}"
                )
            key = id(node)
            if expanded:
                if state.get(key) != 2:
                    state[key] = 2
                    order.append(node)
                continue
            if state.get(key) == 2:
                continue
            state[key] = 1
            stack.append((t, True))
            for parent in reversed(node.inputs):
                if id(parent) not in known_inputs and state.get(id(parent.node)) != 2:
                    stack.append((parent, False))
        return order

    # ---- running ----------------------------------------------------------------------------
    def _match_inputs(self, inputs) -> list:
        flat_in = self.flat_inputs
        if isinstance(inputs, dict):
            if isinstance(self.inputs, dict):
                missing = [k for k in self.inputs if k not in inputs]
                if missing:
                    raise ValueError(f"model '{self.model_name}': missing inputs {missing}; "
                                     f"received keys {sorted(inputs)}")
                return flatten({k: inputs[k] for k in self.inputs})
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise ValueError(
                    f"model '{self.model_name}': dict inputs must be keyed by the input names "
                    f"{self.input_names}; missing {missing}, received keys {sorted(inputs)}"
                )
            return [inputs[n] for n in self.input_names]
        values = flatten(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(values) != len(flat_in):
            raise ValueError(
                f"model '{self.model_name}' expects {len(flat_in)} input(s) "
                f"({self.input_names}), but it received {len(values)}"
            )
        return values

    def check_input(self, i: int, value) -> None:
        spec = self.flat_inputs[i]
        shape = tuple(value.shape if isinstance(value, Tensor) else np.shape(value))  # no values
        ok = len(shape) == len(spec.shape) and all(
            s is None or s == d for s, d in zip(spec.shape, shape))
        if not ok:
            raise ValueError(
                f"Input {i} ('{self.input_names[i]}') of model '{self.model_name}' is "
                f"incompatible: expected shape {spec.shape}, received {shape}"
            )

    def run(self, inputs, mask=None):
        """Replay the graph on concrete ``inputs`` (same structure as the model inputs).

        Layers inherit ``training`` from the enclosing model call. ``mask`` (one per
        input, or None) is attached to the inputs as Keras masks.
        """
        values = self._match_inputs(inputs)
        masks = [None] * len(values) if mask is None else flatten(mask)
        memo = {}
        for i, (sym, v) in enumerate(zip(self.flat_inputs, values)):
            if not isinstance(v, Tensor):
                v = np.asarray(v)
                if v.dtype == np.float64 and sym.dtype != np.float64:
                    v = v.astype(sym.dtype)
                v = wrap(v)
            self.check_input(i, v)
            if i < len(masks) and masks[i] is not None and masks[i] is not \
                    getattr(v, "_keras_mask", None):
                set_keras_mask(v, masks[i])
            memo[id(sym)] = v
        return self.replay(memo)

    def replay(self, memo: dict, call=None):
        """Run every node in order on the values in ``memo`` (``id(SymbolicTensor)`` ->
        value, holding the inputs' values) and return the outputs' values.

        ``call(node, args, kwargs)`` replaces ``node.layer(*args, **kwargs)`` when given
        (``lk.models.clone_model`` replays the graph with new layers that way).
        """
        def lookup(x):
            return memo[id(x)] if type(x) is SymbolicTensor else x

        for node in self.nodes:
            args = tuple(map_structure(lookup, a) if isinstance(a, (list, tuple, dict))
                         else lookup(a) for a in node.call_args)
            kwargs = {k: map_structure(lookup, v) for k, v in node.call_kwargs.items()} \
                if node.call_kwargs else {}
            out = node.layer(*args, **kwargs) if call is None else call(node, args, kwargs)
            outs = node.outputs
            if type(outs) is SymbolicTensor:
                memo[id(outs)] = out
            else:
                for sym, val in zip(flatten(outs), flatten(out)):
                    memo[id(sym)] = val
        return pack_sequence_as(self.outputs, [memo[id(t)] for t in self.flat_outputs])
