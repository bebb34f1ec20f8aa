"""Recurrent layers: RNN (loops any cell), SimpleRNN, LSTM, GRU, Bidirectional."""
from __future__ import annotations

from layerkit.layers.input_spec import InputSpec
from layerkit.layers.layer import Layer
from layerkit.layers.recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell
from layerkit.ops import array as _array
from layerkit.ops import creation as _creation
from layerkit.ops import elementwise as _ew

__all__ = ["RNN", "SimpleRNN", "LSTM", "GRU", "Bidirectional"]

_RNN_ARGS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
             "name", "trainable", "dtype", "input_shape", "batch_input_shape", "input_dim",
             "batch_size", "activity_regularizer", "time_major", "zero_output_for_mask")


def _sizes(cell) -> list:
    s = cell.state_size
    return list(s) if isinstance(s, (list, tuple)) else [s]


def _serialize(layer) -> dict:
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(layer)


def _deserialize(config, custom_objects):
    """A layer from its config: built-in, registered (``lk.saving``) or in
    ``custom_objects``; an object that is not a config passes through."""
    if not isinstance(config, dict):
        return config
    from layerkit.saving.serialization_lib import deserialize_keras_object

    return deserialize_keras_object(config, custom_objects, kind="layers")


class RNN(Layer):
    """Runs a cell over the time axis of ``(batch, time, features)`` inputs.

    Any object following the cell contract works: ``state_size``, and
    ``call(inputs, states) -> (output, new_states)`` with ``states`` a list. The stock
    ``SimpleRNNCell``, ``LSTMCell`` and ``GRUCell`` in their default form run the whole
    sequence as one fused record (:mod:`layerkit.ops.rnn`: NumPy loops forward and
    backward, no per-step eager ops); other cells and configurations loop step by step.

    Args:
        cell: the cell (e.g. ``LSTMCell(32)`` or a user's own).
        return_sequences: return every step's output ``(batch, time, units)`` instead of
            the last one ``(batch, units)``.
        return_state: also return the final states: ``[output, *states]``.
        go_backwards: process the sequence in reverse (and return reversed sequences).

    Call arguments: ``inputs``, ``initial_state`` (list of ``(batch, size)`` tensors),
    ``training``.

    Example:
        >>> import layerkit as lk
        >>> lk.layers.RNN(lk.layers.SimpleRNNCell(4))(lk.ones((2, 5, 3))).shape
        (2, 4)
    """

    def __init__(self, cell, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 **kwargs) -> None:
        for k in ("time_major", "zero_output_for_mask"):
            kwargs.pop(k, None)
        super().__init__(**kwargs)
        if not callable(getattr(cell, "call", None)) or not hasattr(cell, "state_size"):
            raise ValueError(f"RNN: `cell` must have a `call(inputs, states)` method and a "
                             f"`state_size` attribute; received {cell!r}")
        if stateful:
            raise NotImplementedError("RNN: stateful=True is not supported")
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.stateful, self.unroll = bool(go_backwards), False, unroll
        self.input_spec = InputSpec(min_ndim=3)

    def build(self, input_shape) -> None:
        if isinstance(self.cell, Layer) and not self.cell.built:
            self.cell.build((input_shape[0],) + tuple(input_shape[2:]))

    def _initial_state(self, inputs, initial_state) -> list:
        batch = inputs.shape[0]
        if initial_state is None:
            init = getattr(self.cell, "get_initial_state", None)
            if init is not None:
                return list(init(batch))
            return [_creation.zeros((batch, s), self._dtype) for s in _sizes(self.cell)]
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
            else [initial_state]
        want = [(batch, s) for s in _sizes(self.cell)]
        got = [tuple(s.shape) for s in states]
        if got != want:
            raise ValueError(f"RNN '{self.name}': initial_state must be {len(want)} tensor(s) "
                             f"of shapes {want}; received shapes {got}")
        return [self._convert(s) for s in states]

    def call(self, inputs, initial_state=None, training=None):
        cell = self.cell
        if inputs.shape[1] == 0:
            raise ValueError(f"RNN '{self.name}': the input has no time steps (shape "
                             f"{inputs.shape})")
        states = self._initial_state(inputs, initial_state)
        kw = {"training": training} if isinstance(cell, Layer) and \
            cell._call_accepts_training() else {}
        if hasattr(cell, "reset_dropout_mask"):
            cell.reset_dropout_mask()
        # Stock cells in their default form run the whole sequence as one record.
        fused = getattr(cell, "fused_sequence", None)
        fused = fused(inputs, states, self.go_backwards, training) if fused else None
        if fused is not None:
            seq, states = fused
            output = seq if self.return_sequences else states[0]
            return [output] + states if self.return_state else output
        # Built-in cells project all time steps with one GEMM before the loop.
        if hasattr(cell, "project_inputs") and hasattr(cell, "step"):
            steps, step = _array.unstack(cell.project_inputs(inputs, **kw), axis=1), cell.step
        else:
            steps, step = _array.unstack(inputs, axis=1), cell.call
        if self.go_backwards:
            steps = steps[::-1]
        outputs = []
        for x in steps:
            out, states = step(x, states, **kw)
            states = list(states) if isinstance(states, (list, tuple)) else [states]
            outputs.append(out)
        output = _array.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        return [output] + states if self.return_state else output

    def get_config(self) -> dict:
        config = {**super().get_config(), "return_sequences": self.return_sequences,
                  "return_state": self.return_state, "go_backwards": self.go_backwards}
        if type(self) is RNN:
            config["cell"] = _serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """A layer from :meth:`get_config` output (Keras's too); a custom cell class must
        be registered or given in ``custom_objects`` (as in Keras)."""
        from layerkit._core.serialization import init_kwargs

        config = init_kwargs(cls, config)
        if "cell" in config:
            config["cell"] = _deserialize(config["cell"], custom_objects)
        return cls(**config)


class _CellRNN(RNN):
    """RNN layers that own a built-in cell: arguments split between cell and layer."""

    _cast_int_inputs = True

    cell_class: type = SimpleRNNCell

    def __init__(self, units: int, **kwargs) -> None:
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

    Example:
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
    """

    def __init__(self, layer, merge_mode: str | None = "concat", weights=None,
                 backward_layer=None, **kwargs) -> None:
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
        self._initial_weights = weights

    @staticmethod
    def _clone(layer: RNN, prefix: str, go_backwards: bool) -> RNN:
        name = layer.name[len(prefix):] if layer.name.startswith(prefix) else layer.name
        config = {**layer.get_config(), "name": prefix + name, "go_backwards": go_backwards}
        return type(layer).from_config(config)

    def build(self, input_shape) -> None:
        self.forward_layer.build(input_shape)
        self.backward_layer.build(input_shape)
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def call(self, inputs, initial_state=None, training=None):
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(inputs, initial_state=fwd_state, training=training)
        y_rev = self.backward_layer(inputs, initial_state=bwd_state, training=training)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = _array.reverse(y_rev, [1])
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

    def get_config(self) -> dict:
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": _serialize(self.forward_layer),
                "backward_layer": _serialize(self.backward_layer)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """A layer from :meth:`get_config` output (Keras's too)."""
        from layerkit._core.serialization import init_kwargs

        config = init_kwargs(cls, config)
        config["layer"] = _deserialize(config["layer"], custom_objects)
        if config.get("backward_layer") is not None:
            config["backward_layer"] = _deserialize(config["backward_layer"], custom_objects)
        return cls(**config)
