"""What ``compile`` sets up: the loss and the metrics, matched to the model's outputs.

Both are resolved lazily at the first batch, when the structures and shapes of ``y`` and
``y_pred`` are known (``'accuracy'`` depends on them, as in Keras).
"""
from __future__ import annotations

import numpy as np

from layerkit import losses as _losses
from layerkit import metrics as _metrics
from layerkit._core.nest import flatten
from layerkit._core.tensor import Tensor
from layerkit.checkpoint import trackable
from layerkit.primitives import elementwise as _ew


def _per_output(spec, output_names: list, what: str) -> list:
    """Spread a compile argument (single, list or dict) over the outputs."""
    n = len(output_names)
    if isinstance(spec, dict):
        unknown = [k for k in spec if k not in output_names]
        if unknown:
            raise ValueError(f"compile: {what} has keys {unknown} that are not output names; "
                             f"the model's outputs are {output_names}")
        return [spec.get(name) for name in output_names]
    if isinstance(spec, (list, tuple)) and n > 1:
        if len(spec) != n:
            raise ValueError(f"compile: {what} is a list of {len(spec)} entries but the model "
                             f"has {n} outputs ({output_names})")
        return list(spec)
    return [spec] * n


def _flat_targets(y, output_names: list, what: str) -> list:
    if isinstance(y, dict):
        missing = [k for k in output_names if k not in y]
        if missing:
            raise ValueError(f"{what}: targets are missing outputs {missing}; received keys "
                             f"{sorted(y)}")
        return [y[k] for k in output_names]
    if len(output_names) == 1:
        return [y]
    flat = flatten(y) if isinstance(y, (list, tuple)) else [y]
    if len(flat) != len(output_names):
        raise ValueError(f"{what}: the model has {len(output_names)} outputs "
                         f"({output_names}) but received {len(flat)} targets")
    return flat


class CompileLoss:
    """The compiled loss: one loss per output, weighted and summed.

    Call it as ``compiled_loss(y_true, y_pred, sample_weight=None,
    regularization_losses=None)``. With several outputs, ``output_losses`` holds the
    latest per-output values (logged as ``<output>_loss``).
    """

    def __init__(self, loss, loss_weights=None, output_names=None) -> None:
        self._spec = loss
        self._weights_spec = loss_weights
        self.output_names = list(output_names or ["output"])
        self.losses: list | None = None
        self.output_losses: list = []
        self.trackers: list = []  # per-output loss means, logged as <output>_loss
        self._single = None

    def build(self, y_pred) -> None:
        flat = flatten(y_pred)
        names = self.output_names if len(self.output_names) == len(flat) else \
            [f"output_{i}" for i in range(len(flat))]
        self.output_names = names
        self.losses = [_losses.get(x) for x in _per_output(self._spec, names, "loss")]
        if len(names) > 1:
            self.trackers = [_metrics.Mean(name=f"{n}_loss") if loss is not None else None
                             for n, loss in zip(names, self.losses)]
        ws = self._weights_spec
        self.weights = [1.0] * len(names) if ws is None else \
            [1.0 if w is None else float(w) for w in _per_output(ws, names, "loss_weights")]
        self._single = self.losses[0] if len(names) == 1 and self.weights[0] == 1.0 else None
        trackable.settle(self)   # values a checkpoint restore parked for the trackers

    def _checkpoint_children(self) -> dict:
        return {t.name: t for t in self.metrics}

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        if self.losses is None:
            self.build(y_pred)
        if self._single is not None:
            if y_true is None:
                raise ValueError(
                    "the model was compiled with a loss, but the data has no targets y; pass "
                    "y to fit/evaluate (or (x, y) batches from a dataset)"
                )
            total = self._single(y_true, y_pred, sample_weight)
        else:
            targets = _flat_targets(y_true, self.output_names, "loss")
            preds = flatten(y_pred)
            sws = _flat_targets(sample_weight, self.output_names, "sample_weight") \
                if isinstance(sample_weight, (dict, list, tuple)) else [sample_weight] * len(preds)
            total = None
            self.output_losses = []
            for i, (loss, w, yt, yp, sw) in enumerate(zip(self.losses, self.weights, targets,
                                                           preds, sws)):
                if loss is None or yt is None:
                    self.output_losses.append(None)
                    continue
                try:
                    value = loss(yt, yp, sw)
                except ValueError as e:  # say which output: the loss alone cannot
                    raise ValueError(f"loss of output '{self.output_names[i]}': {e}") from e
                self.output_losses.append(value)
                n = yp.shape[0] if getattr(yp, "ndim", 0) else 1
                self.trackers[i].update_state(value, sample_weight=int(n))
                if w != 1.0:
                    value = _ew.multiply(value, w)
                total = value if total is None else _ew.add(total, value)
        if regularization_losses:
            for r in regularization_losses:
                total = r if total is None else _ew.add(total, r)
        return total


    @property
    def metrics(self) -> list:
        return [t for t in self.trackers if t is not None]


class CompileMetrics(_metrics.Metric):
    """All compiled metrics as one metric named ``compile_metrics``.

    ``update_state(y_true, y_pred, sample_weight=None)`` updates every metric;
    ``result()`` is a dict ``{name: Tensor}``. With several outputs, metric names are
    prefixed by the output name.
    """

    def __init__(self, metrics=None, weighted_metrics=None, output_names=None,
                 loss_spec=None) -> None:
        super().__init__(name="compile_metrics")
        self._spec = metrics
        self._weighted_spec = weighted_metrics
        self._loss_spec = loss_spec
        self.output_names = list(output_names or ["output"])
        self.built = False
        self._entries: list = []  # (metric, output index, weighted?)

    @property
    def metrics(self) -> list:
        return [m for m, _, _ in self._entries]

    def build(self, y_true, y_pred) -> None:
        preds = flatten(y_pred)
        n = len(preds)
        names = self.output_names if len(self.output_names) == n else \
            [f"output_{i}" for i in range(n)]
        targets = _flat_targets(y_true, names, "metrics")
        loss_specs = _per_output(self._loss_spec, names, "loss")
        entries = []
        for spec, weighted in ((self._spec, False), (self._weighted_spec, True)):
            if not spec:
                continue
            per = _per_output(spec, names, "metrics") if isinstance(spec, dict) or (
                n > 1 and isinstance(spec, (list, tuple))
                and all(isinstance(s, (list, tuple)) for s in spec)) else [spec] * n
            for i, group in enumerate(per):
                if group is None:
                    continue
                for ident in (group if isinstance(group, (list, tuple)) else [group]):
                    m = _metrics.resolve(ident, targets[i], preds[i], loss_specs[i])
                    if weighted and isinstance(ident, str):
                        m.name = "weighted_" + m.name
                    if n > 1:
                        m.name = f"{names[i]}_{m.name}"
                    entries.append((m, i, weighted))
        self._entries = entries
        self.output_names = names
        self.built = True
        trackable.settle(self)   # values a checkpoint restore parked for these metrics

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        if y_true is None:
            return
        if not self.built:
            self.build(y_true, y_pred)
        if not self._entries:
            return
        if len(self.output_names) == 1:
            for m, _, weighted in self._entries:
                m.update_state(y_true, y_pred, sample_weight if weighted else None)
            return
        targets = _flat_targets(y_true, self.output_names, "metrics")
        preds = flatten(y_pred)
        sws = _flat_targets(sample_weight, self.output_names, "sample_weight") \
            if isinstance(sample_weight, (dict, list, tuple)) else [sample_weight] * len(preds)
        for m, i, weighted in self._entries:
            m.update_state(targets[i], preds[i], sws[i] if weighted else None)

    def result(self) -> dict:
        return {m.name: m.result() for m, _, _ in self._entries}

    def reset_state(self) -> None:
        for m, _, _ in self._entries:
            m.reset_state()

    @property
    def variables(self) -> list:
        return [v for m in self.metrics for v in m.variables]

    def _checkpoint_children(self) -> dict:
        return {m.name: m for m in self.metrics}


def to_float(v):
    """A log value as a Python float (Tensors, arrays and NumPy scalars)."""
    if isinstance(v, Tensor):
        v = v._v
    if isinstance(v, np.ndarray):
        return float(v) if v.size == 1 else v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v
