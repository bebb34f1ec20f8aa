"""RNN cells: SimpleRNNCell, LSTMCell, GRUCell (Keras weight layouts and gate orders).

The cell contract, which :class:`layerkit.layers.RNN` relies on and a user's cell can
follow too: ``state_size`` (an int or a list of ints), ``call(inputs, states) ->
(output, new_states)`` with ``states`` always a list, optional ``output_size`` and
``get_initial_state(batch_size)``.

The built-in cells also offer ``project_inputs(sequence)`` (the input projection of all
time steps as one GEMM) and ``step(projected_t, states)``; ``call`` is the two composed,
so there is one implementation of each recurrence for the per-step loop.

``fused_sequence(inputs, states, go_backwards, training)`` runs a whole sequence as one
record of :mod:`layerkit.primitives.rnn` (forward and backward in NumPy, no per-step eager
ops) when the cell is a stock cell in its default form (tanh / sigmoid activations, GRU
with ``reset_after=True``, no recurrent dropout while training); otherwise it returns
None and :class:`~layerkit.layers.RNN` loops ``step``. Both paths compute the same thing.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerkit import constraints, initializers, regularizers
from layerkit._core.tensor import Tensor
from layerkit._core.types import TensorLike
from layerkit.layers import activations
from layerkit.layers.layer import Layer, layer_from_config, layer_to_config
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import linalg as _linalg
from layerkit.primitives import nn as _nn
from layerkit.primitives import random as _random
from layerkit.primitives import rnn as _rnn

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"]


class _Cell(Layer):
    """Arguments, weights, dropout masks and the input projection shared by the cells."""

    _cast_int_inputs = True

    gates = 1
    step: Callable[..., Any]  # each cell defines its recurrence

    def __init__(self, units: int, activation: str | Callable | None = "tanh",
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"{type(self).__name__}: `units` must be a positive int; received "
                             f"units={units!r}")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout, self.recurrent_dropout = min(1.0, dropout), min(1.0, recurrent_dropout)
        self.seed = seed
        self._generator = _random.Generator(seed) if seed is not None else None
        self._masks: list[Tensor | None] = [None, None]

    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def build(self, input_shape: Any) -> None:
        n = self.gates * self.units
        self.kernel = self.add_weight("kernel", (input_shape[-1], n), self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, n), self.recurrent_initializer,
            regularizer=self.recurrent_regularizer, constraint=self.recurrent_constraint)
        self.bias = self.add_weight("bias", self._bias_shape(), self._bias_init(),
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None

    def _bias_shape(self) -> tuple:
        return (self.gates * self.units,)

    def _bias_init(self):
        return self.bias_initializer

    def get_initial_state(self, batch_size: int) -> list:
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) else [self.state_size]
        return [_creation.zeros((batch_size, s), self._dtype) for s in sizes]

    # ---- dropout masks: one per sequence, as Keras ---------------------------------------
    def reset_dropout_mask(self) -> None:
        """Forget the masks, so the next sequence draws new ones (RNN calls this)."""
        self._masks[:] = [None, None]

    def _mask(self, i: int, like, rate: float, training):
        if not training or not rate:
            return None
        if self._masks[i] is None:
            self._masks[i] = _nn.dropout(_creation.ones_like(like), rate, seed=self._generator)
        return self._masks[i]

    def _input_bias(self):
        return self.bias

    def project_inputs(self, inputs: Any, training: bool | None = None) -> Tensor:
        """``inputs @ kernel (+ bias)`` for a whole (batch, ..., features) input at once."""
        step = inputs[:, 0] if inputs.ndim == 3 else inputs
        dp = self._mask(0, step, self.dropout, training)
        if dp is not None:
            inputs = _ew.multiply(inputs, _array.expand_dims(dp, 1) if inputs.ndim == 3 else dp)
        shape = inputs.shape
        z = _linalg.matmul(_array.reshape(inputs, (-1, shape[-1])), self.kernel)
        if self.bias is not None:
            z = _ew.add(z, self._input_bias())
        return _array.reshape(z, shape[:-1] + (z.shape[-1],))

    def _recurrent_input(self, h, training):
        rdp = self._mask(1, h, self.recurrent_dropout, training)
        return _ew.multiply(h, rdp) if rdp is not None else h

    def call(self, inputs: Any, states: Any, training: bool | None = None) -> Any:
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        return self.step(self.project_inputs(inputs, training), states, training)

    def _fusable(self, training) -> bool:
        # Exact stock classes only: a subclass may override step or the projection.
        return (type(self) in _SEQUENCE and self.activation is _ew.tanh
                and getattr(self, "recurrent_activation", _ew.sigmoid) is _ew.sigmoid
                and getattr(self, "reset_after", True)
                and not (training and self.recurrent_dropout))

    def fused_sequence(self, inputs: Any, states: list, go_backwards: bool = False,
                       training: bool | None = None) -> Any:
        """``(sequence, final_states)`` for a whole (batch, time, features) input from
        one fused record, or None when this cell's configuration needs the step loop.

        Input dropout uses the same per-sequence mask as the step loop would.
        """
        if not self._fusable(training):
            return None
        dp = self._mask(0, inputs[:, 0], self.dropout, training)
        if dp is not None:
            inputs = _ew.multiply(inputs, _array.expand_dims(dp, 1))
        out = _SEQUENCE[type(self)](inputs, self.kernel, self.recurrent_kernel, self.bias,
                                    *states, go_backwards=go_backwards)
        return out[0], list(out[1:])

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)``.

    Weights: ``kernel`` (input_dim, units), ``recurrent_kernel`` (units, units),
    ``bias`` (units,). State: ``[h]``.
    """

    def step(self, z: Tensor, states: Any, training: bool | None = None) -> Any:
        h = self._recurrent_input(states[0], training)
        h = self.activation(_ew.add(z, _linalg.matmul(h, self.recurrent_kernel)))
        return h, [h]


class LSTMCell(_Cell):
    """Long short-term memory cell, Keras layout: gates in the order i, f, c, o.

    ``z = x @ kernel + h @ recurrent_kernel + bias``; ``i, f, o = sigmoid(...)``,
    ``g = tanh(z_c)``; ``c = f * c_prev + i * g``; ``h = o * tanh(c)``.

    Args:
        units: state size.
        recurrent_activation: gate activation (default ``'sigmoid'``).
        unit_forget_bias: initialise the forget-gate bias to 1 (default True).

    Weights: ``kernel`` (input_dim, 4 * units), ``recurrent_kernel`` (units, 4 * units),
    ``bias`` (4 * units,). State: ``[h, c]``.
    """

    gates = 4

    def __init__(self, units: int, activation: str | Callable | None = "tanh",
                 recurrent_activation: str = "sigmoid", unit_forget_bias: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(units, activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    @property
    def state_size(self) -> Any:
        return [self.units, self.units]

    def _bias_init(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        u, init = self.units, self.bias_initializer

        def bias(shape, dtype=None):
            return np.concatenate([init((u,), dtype), np.ones((u,), dtype),
                                   init((2 * u,), dtype)])
        return bias

    def step(self, z: Tensor, states: Any, training: bool | None = None) -> Any:
        h, c = self._recurrent_input(states[0], training), states[1]
        z = _ew.add(z, _linalg.matmul(h, self.recurrent_kernel))
        zi, zf, zc, zo = _array.split(z, 4, axis=-1)
        act, ract = self.activation, self.recurrent_activation
        c = _ew.add(_ew.multiply(ract(zf), c), _ew.multiply(ract(zi), act(zc)))
        h = _ew.multiply(ract(zo), act(c))
        return h, [h, c]

    def get_config(self) -> dict:
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias,
                "recurrent_activation": activations.serialize(self.recurrent_activation)}


class GRUCell(_Cell):
    """Gated recurrent unit, Keras layout: gates in the order z (update), r (reset), h.

    With ``reset_after=True`` (default, cuDNN-compatible) the bias has shape
    (2, 3 * units): input bias and recurrent bias, and
    ``hh = tanh(x_h + r * (h @ R_h + b_rh))``. With ``reset_after=False`` the bias is
    (3 * units,) and ``hh = tanh(x_h + (r * h) @ R_h)``. Then ``h = z * h_prev + (1 - z) * hh``.

    Weights: ``kernel`` (input_dim, 3 * units), ``recurrent_kernel`` (units, 3 * units),
    ``bias``. State: ``[h]``.
    """

    gates = 3

    def __init__(self, units: int, activation: str | Callable | None = "tanh",
                 recurrent_activation: str = "sigmoid", reset_after: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(units, activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after

    def _bias_shape(self) -> tuple:
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self):
        return self.bias[0] if self.reset_after else self.bias

    def step(self, x: TensorLike, states: Any, training: bool | None = None) -> Any:
        h_prev = states[0]
        h = self._recurrent_input(h_prev, training)
        xz, xr, xh = _array.split(x, 3, axis=-1)
        u, ract = self.units, self.recurrent_activation
        if self.reset_after:
            rec = _linalg.matmul(h, self.recurrent_kernel)
            if self.bias is not None:
                rec = _ew.add(rec, self.bias[1])
            rz, rr, rh = _array.split(rec, 3, axis=-1)
            z, r = ract(_ew.add(xz, rz)), ract(_ew.add(xr, rr))
            hh = self.activation(_ew.add(xh, _ew.multiply(r, rh)))
        else:
            rec = _linalg.matmul(h, self.recurrent_kernel[:, :2 * u])
            rz, rr = _array.split(rec, 2, axis=-1)
            z, r = ract(_ew.add(xz, rz)), ract(_ew.add(xr, rr))
            rh = _linalg.matmul(_ew.multiply(r, h), self.recurrent_kernel[:, 2 * u:])
            hh = self.activation(_ew.add(xh, rh))
        h_new = _ew.add(_ew.multiply(z, h_prev), _ew.multiply(_ew.subtract(1.0, z), hh))
        return h_new, [h_new]

    def get_config(self) -> dict:
        return {**super().get_config(), "reset_after": self.reset_after,
                "recurrent_activation": activations.serialize(self.recurrent_activation)}


# The whole-sequence record of each stock cell (see ``_Cell.fused_sequence``).
_SEQUENCE: dict[type, Callable[..., Any]] = {
    SimpleRNNCell: _rnn.simple_rnn_sequence, LSTMCell: _rnn.lstm_sequence,
    GRUCell: _rnn.gru_sequence}


class StackedRNNCells(Layer):
    """Cells run one after the other at each step, as one cell (``RNN([cell, ...])``).

    Each cell's output is the next cell's input. ``state_size`` lists each cell's state
    size, and the states are one entry per cell (that cell's list of states).

    Args:
        cells: the cells, first to last.

    Weights: each cell's, in order (Keras).

    Examples:
        >>> import layerkit as lk
        >>> cells = [lk.layers.SimpleRNNCell(4), lk.layers.LSTMCell(3)]
        >>> out, s1, s2 = lk.layers.RNN(cells, return_state=True)(lk.ones((2, 5, 6)))
        >>> out.shape, [t.shape for t in s2]
        ((2, 3), [(2, 3), (2, 3)])
    """

    def __init__(self, cells: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        cells = list(cells)
        for cell in cells:
            if not callable(getattr(cell, "call", None)) or not hasattr(cell, "state_size"):
                raise ValueError(f"StackedRNNCells: every cell needs a `call(inputs, states)` "
                                 f"method and a `state_size`; received {cell!r}")
        if not cells:
            raise ValueError("StackedRNNCells: `cells` is empty")
        self.cells = cells

    @property
    def state_size(self) -> list:
        return [c.state_size for c in self.cells]

    @property
    def output_size(self) -> int:
        last = self.cells[-1]
        size = getattr(last, "output_size", None)
        if size is None:
            size = last.state_size
            size = size[0] if isinstance(size, (list, tuple)) else size
        return size

    def build(self, input_shape: Any) -> None:
        shape = tuple(input_shape)
        for cell in self.cells:
            if isinstance(cell, Layer) and not cell.built:
                cell.build(shape)
            size = getattr(cell, "output_size", None)
            if size is None:
                size = cell.state_size
                size = size[0] if isinstance(size, (list, tuple)) else size
            shape = (shape[0], size)

    def get_initial_state(self, batch_size: int) -> list:
        out = []
        for cell in self.cells:
            init = getattr(cell, "get_initial_state", None)
            if init is not None:
                out.append(init(batch_size))
            elif isinstance(cell.state_size, (list, tuple)):
                out.append([_creation.zeros((batch_size, d), self._dtype)
                            for d in cell.state_size])
            else:
                out.append(_creation.zeros((batch_size, cell.state_size), self._dtype))
        return out

    def reset_dropout_mask(self) -> None:
        """Forget every cell's dropout masks (the next sequence draws new ones)."""
        for cell in self.cells:
            if hasattr(cell, "reset_dropout_mask"):
                cell.reset_dropout_mask()

    def call(self, inputs: Any, states: Any, training: bool | None = None) -> Any:
        new_states = []
        for cell, state in zip(self.cells, states):
            is_list = isinstance(state, (list, tuple))
            state = list(state) if is_list else [state]
            kw = {"training": training} if isinstance(cell, Layer) and \
                cell._call_accepts_training() else {}
            inputs, state = cell.call(inputs, state, **kw)
            state = list(state) if isinstance(state, (list, tuple)) else [state]
            new_states.append(state if is_list or len(state) != 1 else state[0])
        return inputs, new_states

    def get_config(self) -> dict:
        return {**super().get_config(),
                "cells": [layer_to_config(c) for c in self.cells]}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        """Stacked cells from :meth:`get_config` output (Keras's too)."""
        config = dict(config)
        cells = [layer_from_config(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)
