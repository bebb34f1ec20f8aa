"""Recurrent layers: RNN (loops any cell), SimpleRNN, LSTM, GRU, Bidirectional, and the
TimeDistributed wrapper."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.types import TensorLike
from layerkit._core.variable import Variable
from layerkit.layers import symbolic as _sym
from layerkit.layers.core import Activation, Dense, Embedding, Flatten
from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer, _mask_info, layer_from_config, layer_to_config
from layerkit.layers.recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from layerkit.primitives import array as _array
from layerkit.primitives import creation as _creation
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import selection as _selection

__all__ = ["RNN", "SimpleRNN", "LSTM", "GRU", "Bidirectional", "TimeDistributed"]

_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
             "name", "trainable", "dtype", "input_shape", "batch_input_shape", "input_dim",
             "batch_size", "activity_regularizer", "time_major", "zero_output_for_mask")


def _sizes(cell) -> list:
    s = cell.state_size
    return list(s) if isinstance(s, (list, tuple)) else [s]


def _first_mask(mask):
    """The (batch, time) mask of the sequences (Keras: the first of a nested mask)."""
    if isinstance(mask, (list, tuple)):
        mask = flatten(mask)[0]
    return mask


class RNN(Layer):
    """Runs a cell over the time axis of ``(batch, time, features)`` inputs.

    Any object following the cell contract works: ``state_size``, and
    ``call(inputs, states) -> (output, new_states)`` with ``states`` a list. A list of
    cells is stacked (:class:`StackedRNNCells`). The stock ``SimpleRNNCell``,
    ``LSTMCell`` and ``GRUCell`` in their default form run the whole sequence as one
    fused record (:mod:`layerkit.primitives.rnn`: NumPy loops forward and backward, no per-step
    eager ops); other cells, configurations and masked inputs loop step by step.

    Args:
        cell: the cell (e.g. ``LSTMCell(32)`` or a user's own), or a list of cells.
        return_sequences: return every step's output ``(batch, time, units)`` instead of
            the last one ``(batch, units)``.
        return_state: also return the final states: ``[output, *states]`` (for stacked
            cells one entry per cell, each that cell's list of states, as Keras).
        go_backwards: process the sequence in reverse (and return reversed sequences).
        stateful: keep the final states of each call and start the next call from them
            (sample ``i`` of a batch continues sample ``i`` of the previous batch), as
            Keras. The batch size must be known when the layer is built (``lk.Input(
            batch_shape=...)`` or ``batch_input_shape=``) and every batch must have it.
            The states are the non-trainable Variables in ``layer.states``, not weights
            (not in ``weights``, weight files or checkpoints, as Keras 3); the update is a
            recorded assign, so it also runs in ``lk.function`` and ``fit``'s traced
            steps. ``reset_state()`` zeros them (``reset_state(values)`` sets them);
            ``initial_state=`` still overrides them for one call. Use ``shuffle=False``
            in ``fit``.
        zero_output_for_mask: with a mask, masked steps output zeros instead of the
            previous step's output (``Bidirectional`` sets it when returning sequences).

    Call arguments: ``inputs``, ``initial_state`` (list of ``(batch, size)`` tensors),
    ``mask`` (``(batch, time)`` booleans, usually attached to the inputs by
    ``Embedding(mask_zero=True)`` or ``Masking``: a masked step leaves the states
    unchanged and repeats the previous output), ``training``.

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.RNN(lk.layers.SimpleRNNCell(4))(lk.ones((2, 5, 3))).shape
        (2, 4)
    """

    states: list | None  # a stateful layer's state variables (set with object.__setattr__)

    supports_masking = True

    def __init__(self, cell: Any, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 zero_output_for_mask: bool = False, **kwargs: Any) -> None:
        kwargs.pop("time_major", None)
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not callable(getattr(cell, "call", None)) or not hasattr(cell, "state_size"):
            raise ValueError(f"RNN: `cell` must have a `call(inputs, states)` method and a "
                             f"`state_size` attribute; received {cell!r}")
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), bool(stateful), unroll
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.input_spec = InputSpec(min_ndim=3)
        # Keras 3: the state variables are not the layer's weights (not in `weights`,
        # weight files or checkpoints): kept outside the tracked attributes.
        object.__setattr__(self, "states", None)

    def build(self, input_shape: Any) -> None:
        if isinstance(self.cell, Layer) and not self.cell.built:
            self.cell.build((input_shape[0],) + tuple(input_shape[2:]))
        if not self.stateful:
            return
        if self.states is not None:
            self.reset_state()
            return
        batch = input_shape[0]
        if batch is None:
            raise ValueError(
                f"RNN '{self.name}': with stateful=True the batch size must be known when "
                f"the layer is built; received input shape {tuple(input_shape)}. Give it, "
                f"e.g. lk.Input(batch_shape=(32, ...)) or batch_input_shape=(32, ...) on the "
                f"first layer")
        init = self._initial_state(batch, None)
        states = pack_like(init, [Variable(t, trainable=False, name="rnn_state",
                                           dtype=self._dtype) for t in flatten(init)])
        object.__setattr__(self, "states", states)

    def reset_state(self, states: Any = None) -> None:
        """Set the states of a stateful layer to zeros, or to ``states`` (Keras 3).

        Does nothing for a layer that keeps no states (not stateful, or not built yet).

        Args:
            states: optional values: one array per state (a flat list, or nested as the
                states of stacked cells), each of shape ``(batch, state_size)``.

        Raises:
            ValueError: ``states`` is given but the layer has no states, or their number
                or shapes differ from the layer's.
        """
        own = self.states
        if own is None:
            if states is not None:
                raise ValueError(f"RNN '{self.name}': reset_state(states=...) needs a "
                                 f"stateful layer that is built (called once); "
                                 f"stateful={self.stateful}, built={self.built}")
            return
        own = flatten(own)
        if states is None:
            for v in own:
                v.assign(np.zeros(v.shape, v.dtype))
            return
        values = flatten(states) if isinstance(states, (list, tuple)) else [states]
        want = [tuple(v.shape) for v in own]
        got = [tuple(np.shape(x)) for x in values]
        if got != want:
            raise ValueError(f"RNN '{self.name}': reset_state expects {len(want)} state "
                             f"value(s) of shapes {want}; received shapes {got}")
        for v, x in zip(own, values):
            v.assign(x)

    reset_states = reset_state

    def _check_batch(self, inputs) -> None:
        batch = flatten(self.states)[0].shape[0]
        if inputs.shape[0] != batch:
            raise ValueError(
                f"RNN '{self.name}' is stateful with states for a batch of {batch} "
                f"sequences; received a batch of {inputs.shape[0]} (input shape "
                f"{tuple(inputs.shape)}). Feed batches of the same size (fit/predict with "
                f"that batch_size and a sample count that is a multiple of it)")

    def _initial_state(self, batch: int, initial_state) -> list:
        if initial_state is None:
            init = getattr(self.cell, "get_initial_state", None)
            if init is not None:
                return list(init(batch))
            return [_creation.zeros((batch, s), self._dtype) for s in _sizes(self.cell)]
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
            else [initial_state]
        sizes = _sizes(self.cell)
        want = [(batch, s) for s in flatten(sizes)]
        got = [tuple(s.shape) for s in flatten(states)]
        if got != want:
            raise ValueError(f"RNN '{self.name}': initial_state must be {len(want)} tensor(s) "
                             f"of shapes {want}; received shapes {got}")
        if len(states) != len(sizes):  # stacked cells: regroup a flat list per cell
            states = pack_like(sizes, flatten(states))
        return [pack_like(s, [self._convert(t) for t in flatten(s)])
                if isinstance(s, (list, tuple)) else self._convert(s) for s in states]

    def call(self, inputs: Any, initial_state: Any = None, mask: Any = None,
             training: bool | None = None) -> Any:
        cell = self.cell
        if inputs.shape[1] == 0:
            raise ValueError(f"RNN '{self.name}': the input has no time steps (shape "
                             f"{inputs.shape})")
        keep = self.states is not None and not _sym.probing()
        if keep:  # stateful: start from the stored states (live reads when traced)
            self._check_batch(inputs)
        if keep and initial_state is None:
            states = pack_like(self.states, [v.value() for v in flatten(self.states)])
        else:
            batch = inputs.shape[0]
            if initial_state is None and context.RECORDERS and (
                    context.dynamic_dims(inputs) or (False,))[0]:
                batch = _array.getitem(_selection.shape(inputs), 0)  # a None batch: run time
            states = self._initial_state(batch, initial_state)
        kw = {"training": training} if isinstance(cell, Layer) and \
            cell._call_accepts_training() else {}
        if hasattr(cell, "reset_dropout_mask"):
            cell.reset_dropout_mask()
        mask = _first_mask(mask)
        # Stock cells in their default form run the whole sequence as one record.
        fused = getattr(cell, "fused_sequence", None) if mask is None else None
        fused = fused(inputs, states, self.go_backwards, training) if fused else None
        if fused is not None:
            seq, states = fused
            output = seq if self.return_sequences else states[0]
        else:
            output, states = self._loop(inputs, states, kw, mask)
        if keep:  # a recorded assign: it runs on every call of a traced function
            for v, t in zip(flatten(self.states), flatten(states)):
                v.assign(t)
        return [output] + states if self.return_state else output

    def _loop(self, inputs, states: list, kw: dict, mask):
        """``(output, final_states)`` from the step loop (masked or not)."""
        cell = self.cell
        # Built-in cells project all time steps with one GEMM before the loop.
        if hasattr(cell, "project_inputs") and hasattr(cell, "step"):
            steps, step = _array.unstack(cell.project_inputs(inputs, **kw), axis=1), cell.step
        else:
            steps, step = _array.unstack(inputs, axis=1), cell.call
        if self.go_backwards:
            steps = steps[::-1]
        if mask is not None:
            return self._masked_loop(steps, step, states, mask, kw)
        outputs = []
        for x in steps:
            out, states = step(x, states, **kw)
            states = list(states) if isinstance(states, (list, tuple)) else [states]
            outputs.append(out)
        return _array.stack(outputs, axis=1) if self.return_sequences else outputs[-1], states

    def _masked_loop(self, steps: list, step, states: list, mask, kw: dict):
        """The step loop where a masked step keeps the previous states, and outputs the
        previous output (zeros before the first kept step), or zeros with
        ``zero_output_for_mask`` (Keras's rule)."""
        if tuple(mask.shape[:2]) != (steps[0].shape[0], len(steps)):
            raise ValueError(f"RNN '{self.name}': the mask must have shape (batch, time) = "
                             f"{(steps[0].shape[0], len(steps))}; received {tuple(mask.shape)}")
        keep = _array.unstack(_array.expand_dims(_ew.cast(mask, "bool"), -1), axis=1)
        if self.go_backwards:
            keep = keep[::-1]
        outputs, prev = [], None
        for x, k in zip(steps, keep):
            out, new = step(x, states, **kw)
            new = list(new) if isinstance(new, (list, tuple)) else [new]
            zero = _creation.zeros_like(out)
            out = _ew.where(k, out, zero if prev is None or self.zero_output_for_mask else prev)
            states = pack_like(new, [_ew.where(k, a, b) for a, b in
                                     zip(flatten(new), flatten(states))])
            outputs.append(out)
            prev = out
        return _array.stack(outputs, axis=1) if self.return_sequences else outputs[-1], states

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for sequence outputs; None for the last output and states."""
        mask = _first_mask(mask)
        out = mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * len(_sizes(self.cell))
        return out

    def get_config(self) -> dict:
        config = {**super().get_config(), "return_sequences": self.return_sequences,
                  "return_state": self.return_state, "go_backwards": self.go_backwards,
                  "stateful": self.stateful, "unroll": self.unroll,
                  "zero_output_for_mask": self.zero_output_for_mask}
        if type(self) is RNN:
            config["cell"] = layer_to_config(self.cell)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        """A layer from :meth:`get_config` output (Keras's too); a custom cell class must
        be registered or given in ``custom_objects`` (as in Keras)."""
        from layerkit._core.serialization import init_kwargs

        config = init_kwargs(cls, config)
        if "cell" in config:
            config["cell"] = layer_from_config(config["cell"], custom_objects)
        return cls(**config)


class _CellRNN(RNN):
    """RNN layers that own a built-in cell: arguments split between cell and layer."""

    _cast_int_inputs = True

    cell_class: type = SimpleRNNCell

    def __init__(self, units: int, **kwargs: Any) -> None:
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _RNN_ARGS}
        cell = self.cell_class(units, dtype=layer_kwargs.get("dtype", "float32"), **kwargs)
        super().__init__(cell, **layer_kwargs)

    def __getattr__(self, name: str):
        # units, activation, dropout, ... read through to the cell, as in Keras.
        cell = self.__dict__.get("cell")
        if cell is not None and not name.startswith("_") and hasattr(cell, name):
            return getattr(cell, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_config(self) -> dict:
        cell = {k: v for k, v in self.cell.get_config().items()
                if k not in ("name", "trainable", "dtype")}
        return {**super().get_config(), **cell}


class SimpleRNN(_CellRNN):
    """Fully connected RNN: ``RNN(SimpleRNNCell(units, ...))``; accepts the arguments of
    both. Weights: ``kernel``, ``recurrent_kernel``, ``bias`` as :class:`SimpleRNNCell`."""

    cell_class = SimpleRNNCell


class LSTM(_CellRNN):
    """Long short-term memory layer: ``RNN(LSTMCell(units, ...))`` (Keras layout, gates
    i, f, c, o; weights ``kernel`` (in, 4u), ``recurrent_kernel`` (u, 4u), ``bias`` (4u,)).

    With the default activations (tanh, sigmoid) and no recurrent dropout while
    training, the whole sequence is one fused record each way (forward and BPTT in
    NumPy, the input projection of all steps one GEMM); otherwise the step loop runs.

    Examples:
        >>> import layerkit as lk
        >>> out, h, c = lk.layers.LSTM(8, return_state=True)(lk.ones((2, 5, 3)))
        >>> out.shape, c.shape
        ((2, 8), (2, 8))
    """

    cell_class = LSTMCell


class GRU(_CellRNN):
    """Gated recurrent unit layer: ``RNN(GRUCell(units, ...))`` (Keras layout, gates
    z, r, h; ``reset_after=True``: bias (2, 3u)).

    With ``reset_after=True``, the default activations and no recurrent dropout while
    training, the whole sequence is one fused record each way; otherwise the step loop.
    """

    cell_class = GRUCell


class Bidirectional(Layer):
    """Runs a recurrent layer forwards and a copy of it backwards, and merges the outputs.

    Args:
        layer: an ``RNN`` instance (``LSTM(...)``, ``GRU(...)``, ...); it is cloned from
            its config into ``forward_layer`` and ``backward_layer``.
        merge_mode: ``'concat'`` (default), ``'sum'``, ``'mul'``, ``'ave'`` or None (a list
            of both outputs).
        backward_layer: optional explicit backward layer.

    Weights: the forward layer's, then the backward layer's (Keras order).

    A mask (``(batch, time)``, e.g. from ``Embedding(mask_zero=True)``) goes to both
    layers; when returning sequences, masked steps output zeros in both directions
    (Keras sets ``zero_output_for_mask`` on them).
    """

    supports_masking = True

    def __init__(self, layer: RNN, merge_mode: str | None = "concat",
                 weights: Sequence[TensorLike] | None = None, backward_layer: RNN | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(layer, RNN):
            raise ValueError(f"Bidirectional: `layer` must be an RNN layer; received {layer!r}")
        if merge_mode not in ("concat", "sum", "mul", "ave", None):
            raise ValueError(f"Bidirectional: invalid merge_mode {merge_mode!r}; expected "
                             f"'concat', 'sum', 'mul', 'ave' or None")
        self.merge_mode = merge_mode
        self.forward_layer = self._clone(layer, "forward_", layer.go_backwards)
        self.backward_layer = backward_layer if backward_layer is not None else \
            self._clone(layer, "backward_", not layer.go_backwards)
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.stateful = layer.stateful
        for sub in (self.forward_layer, self.backward_layer):
            if isinstance(sub, RNN):
                sub.zero_output_for_mask = sub.return_sequences
        self._initial_weights = weights

    @staticmethod
    def _clone(layer: RNN, prefix: str, go_backwards: bool) -> RNN:
        name = layer.name[len(prefix):] if layer.name.startswith(prefix) else layer.name
        config = {**layer.get_config(), "name": prefix + name, "go_backwards": go_backwards}
        return type(layer).from_config(config)

    def build(self, input_shape: Any) -> None:
        self.forward_layer.build(input_shape)
        self.backward_layer.build(input_shape)
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def reset_state(self) -> None:
        """Zero the states of both stateful layers (Keras 3).

        Raises:
            AttributeError: the wrapped layer is not stateful.
        """
        if not self.stateful:
            raise AttributeError(f"Bidirectional '{self.name}': reset_state needs a stateful "
                                 f"layer (stateful=True); this one is not stateful")
        self.forward_layer.reset_state()
        self.backward_layer.reset_state()

    reset_states = reset_state

    def call(self, inputs: Any, initial_state: Any = None, mask: Any = None,
             training: bool | None = None) -> Any:
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = initial_state[:half], initial_state[half:]
        kw = {"training": training}
        if mask is not None:
            kw["mask"] = mask
        y = self.forward_layer(inputs, initial_state=fwd_state, **kw)
        y_rev = self.backward_layer(inputs, initial_state=bwd_state, **kw)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = _array.reverse(y_rev, [1])
        out: Any  # one tensor, or [forward, backward] for merge_mode=None
        if self.merge_mode == "concat":
            out = _array.concat([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            out = _ew.add(y, y_rev)
        elif self.merge_mode == "mul":
            out = _ew.multiply(y, y_rev)
        elif self.merge_mode == "ave":
            out = _ew.multiply(_ew.add(y, y_rev), 0.5)
        else:
            out = [y, y_rev]
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for sequence outputs (for both with ``merge_mode=None``)."""
        mask = _first_mask(mask)
        if not self.return_sequences:
            return None
        return [mask, mask] if self.merge_mode is None else mask

    def get_config(self) -> dict:
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": layer_to_config(self.forward_layer),
                "backward_layer": layer_to_config(self.backward_layer)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        """A layer from :meth:`get_config` output (Keras's too)."""
        from layerkit._core.serialization import init_kwargs

        config = init_kwargs(cls, config)
        config["layer"] = layer_from_config(config["layer"], custom_objects)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = layer_from_config(config["backward_layer"], custom_objects)
        return cls(**config)


# Layers whose output for a sample depends on that sample only and that draw nothing at
# random: TimeDistributed runs them once on (batch * time, ...) instead of per step.
_PER_SAMPLE = (Dense, Activation, Embedding, Flatten)


class TimeDistributed(Layer):
    """Applies ``layer`` to every time step: ``(batch, time, ...) -> (batch, time, ...)``.

    As in Keras 3 the layer runs once per step (so a BatchNormalization sees each step's
    batch, and a masked step gets its slice of the mask when the layer takes ``mask``);
    layers that treat samples independently (Dense, Activation, Embedding, Flatten) run
    once on all steps merged into the batch axis, which gives the same result faster.
    The ``(batch, time)`` mask of the input passes to the output.

    Args:
        layer: the layer to apply (its weights are shared by all steps).

    Examples:
        >>> import layerkit as lk
        >>> lk.layers.TimeDistributed(lk.layers.Dense(4))(lk.ones((2, 5, 3))).shape
        (2, 5, 4)
    """

    supports_masking = True

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ValueError(f"TimeDistributed: `layer` must be a Layer instance; received "
                             f"{layer!r}")
        super().__init__(**kwargs)
        self.layer = layer

    def _check_rank(self, input_shape) -> None:
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) < 3 or \
                isinstance(input_shape[0], (list, tuple)):
            raise ValueError(f"TimeDistributed '{self.name}': the input must have at least 3 "
                             f"dimensions (batch, time, ...); received shape {input_shape}")

    def build(self, input_shape: Any) -> None:
        self._check_rank(input_shape)
        if not self.layer.built:
            self.layer.build((input_shape[0],) + tuple(input_shape[2:]))
            self.layer.__dict__["built"] = True

    def call(self, inputs: Any, training: bool | None = None, mask: Any = None) -> Any:
        self._check_rank(tuple(inputs.shape))
        shape = inputs.shape
        b, t = shape[0], shape[1]
        if mask is not None and tuple(mask.shape[:2]) != (b, t):
            raise ValueError(f"TimeDistributed '{self.name}': the mask's first two dimensions "
                             f"must be (batch, time) = {(b, t)}; received mask shape "
                             f"{tuple(mask.shape)}")
        layer = self.layer
        takes_mask = _mask_info(type(layer))[1]
        kw = {} if training is None else {"training": training}
        if isinstance(layer, _PER_SAMPLE) and not (takes_mask and mask is not None):
            y = layer(_array.reshape(inputs, (b * t,) + tuple(shape[2:])), **kw)
            return _array.reshape(y, (b, t) + tuple(y.shape[1:]))
        outs = []
        for i in range(t):
            if takes_mask and mask is not None:
                kw["mask"] = mask[:, i]
            outs.append(layer(inputs[:, i], **kw))
        return _array.stack(outs, axis=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": layer_to_config(self.layer)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        """A layer from :meth:`get_config` output (Keras's too)."""
        from layerkit._core.serialization import init_kwargs

        config = init_kwargs(cls, config)
        config["layer"] = layer_from_config(config["layer"], custom_objects)
        return cls(**config)
