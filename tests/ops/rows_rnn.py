"""Gradient-table rows for layerkit/primitives/rnn.py: one or more rows per differentiable record.

Each row: ``{"name": <Op.name>, "fn": f(*Tensors), "args": [float64 arrays], "order": 2}``
for ``layerkit.autodiff.check.check_grads(row["fn"], row["args"], order=row["order"])``.
Sizes are tiny (seq 3, batch 2, input 3, units 2); weights are scaled so no gate saturates.

The ``*_sequence`` rows check the NumPy BPTT record (first order) and its vjp (second
order). The ``*_sequence_grad`` rows apply the BPTT record itself to upstream gradients,
so their first order checks its forward-over-reverse rule and their second order the
engine's differentiation of that rule (third order of the sequence).
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import apply
from layerkit.primitives import rnn as R

_rng = np.random.default_rng(11)
SEQ, BATCH, FEATURES, UNITS = 3, 2, 3, 2


def _r(*shape, scale=1.0) -> np.ndarray:
    return _rng.standard_normal(shape) * scale


def _params(gates: int, bias_shape: tuple, n_states: int) -> list:
    return [_r(BATCH, SEQ, FEATURES), _r(FEATURES, gates * UNITS, scale=0.5),
            _r(UNITS, gates * UNITS, scale=0.5), _r(*bias_shape, scale=0.5),
            *[_r(BATCH, UNITS) for _ in range(n_states)]]


def _upstream(n_states: int) -> list:
    return [_r(BATCH, SEQ, UNITS), *[_r(BATCH, UNITS) for _ in range(n_states)]]


def _grad_fn(op, grad_op, n_par: int, n_pub: int, go_backwards: bool):
    """Apply the BPTT record of ``op`` to upstream gradients (args: params, then upstream)."""
    def fn(*args):
        params, ups = args[:n_par], args[n_par:]
        outs = apply(op, *params, go_backwards=go_backwards)
        return list(apply(grad_op, *params, *outs[n_pub:], *ups, go_backwards=go_backwards,
                          wanted=(True,) * n_par))
    return fn


_LSTM_P = _params(4, (4 * UNITS,), 2)
_GRU_P = _params(3, (2, 3 * UNITS), 1)
_RNN_P = _params(1, (UNITS,), 1)

ROWS = [
    # ---- forward records (BPTT record as their gradient) ---------------------------
    {"name": "lstm_sequence", "order": 2, "args": _LSTM_P,
     "fn": lambda *a: R.lstm_sequence(*a)},
    {"name": "lstm_sequence", "order": 2, "args": _LSTM_P,
     "fn": lambda *a: R.lstm_sequence(*a, go_backwards=True)},
    {"name": "gru_sequence", "order": 2, "args": _GRU_P,
     "fn": lambda *a: R.gru_sequence(*a)},
    {"name": "gru_sequence", "order": 2, "args": _GRU_P,
     "fn": lambda *a: R.gru_sequence(*a, go_backwards=True)},
    {"name": "simple_rnn_sequence", "order": 2, "args": _RNN_P,
     "fn": lambda *a: R.simple_rnn_sequence(*a)},
    {"name": "simple_rnn_sequence", "order": 2, "args": _RNN_P,
     "fn": lambda *a: R.simple_rnn_sequence(*a, go_backwards=True)},
    # ---- BPTT records (forward-over-reverse rule, then the engine on it) -----------
    {"name": "lstm_sequence_grad", "order": 2, "args": _LSTM_P + _upstream(2),
     "fn": _grad_fn(R._LSTM, R._LSTM_GRAD, 6, 3, False)},
    {"name": "gru_sequence_grad", "order": 2, "args": _GRU_P + _upstream(1),
     "fn": _grad_fn(R._GRU, R._GRU_GRAD, 5, 2, True)},
    {"name": "simple_rnn_sequence_grad", "order": 2, "args": _RNN_P + _upstream(1),
     "fn": _grad_fn(R._RNN, R._RNN_GRAD, 5, 2, False)},
]
