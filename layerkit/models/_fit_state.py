"""Where a running ``fit`` is, as a checkpoint trackable: the seam ``BackupAndRestore`` uses.

``fit`` keeps one :class:`FitState` in ``model._fit_state`` while it runs (None
otherwise). It holds the epoch, the batches done in it and the feeder (whose position
covers the data order and the shuffling stream), and has the model's metrics as
checkpoint children, so a checkpoint of ``(model, optimizer, lk.checkpoint.GlobalRNG(),
fit_state)`` restores everything the next batch depends on. Restoring it before the first
epoch makes ``fit`` continue at that batch.
"""
from __future__ import annotations

from layerkit import metrics as _metrics
from layerkit.checkpoint import trackable


class FitState:
    """The loop position of one ``fit`` call (see the module docstring).

    Attributes:
        feeder: the training data feeder (``get_state``/``set_state``).
        epoch: the current epoch (0-based).
        step: batches of ``epoch`` already trained.
    """

    def __init__(self, model, feeder, epoch: int) -> None:
        self.model = model
        self.feeder = feeder
        self.epoch = epoch
        self.step = 0
        self._saved_logs: dict = {}

    def resumed_epoch_logs(self) -> dict:
        """The logs of a resumed epoch that had no batch left (saved with the position).

        The metric values saved for metrics that the first batch would have built are
        dropped: no batch comes to build them, and validation must not start from them.
        """
        for name in ("_compile_loss", "_compile_metrics"):
            if self.model.__dict__.get(name) is not None:
                trackable.clear_parked(self.model.__dict__[name])
        return dict(self._saved_logs)

    # ---- trackable protocol (layerkit.checkpoint) ----
    def get_state(self) -> dict:
        logs = {k: v for k, v in self.model.get_metrics_result().items()
                if isinstance(v, float)} if self.step else {}
        return {"epoch": self.epoch, "step": self.step, "feeder": self.feeder.get_state(),
                "logs": logs}

    def set_state(self, state: dict) -> None:
        try:
            epoch, step, feeder = int(state["epoch"]), int(state["step"]), state["feeder"]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"fit: not a training position ({e!r}); expected the state "
                             f"saved from a running fit") from None
        if epoch < 0 or step < 0:
            raise ValueError(f"fit: a training position with a negative epoch or step "
                             f"(epoch={epoch}, step={step})")
        self.feeder.set_state(feeder)
        self.epoch, self.step = epoch, step
        self._saved_logs = dict(state.get("logs") or {})

    def _checkpoint_children(self) -> dict:
        """The metrics' running values (a resumed epoch goes on from them): the loss
        tracker, the compiled loss's and metrics' (restored when they are built, on the
        first batch) and Metric attributes of the model."""
        m = self.model
        kids = {}
        for name in ("_loss_tracker", "_compile_loss", "_compile_metrics"):
            if m.__dict__.get(name) is not None:
                kids[name.lstrip("_")] = m.__dict__[name]
        for attr, v in m.__dict__.items():
            if isinstance(v, _metrics.Metric) and not any(v is k for k in kids.values()):
                kids[f"metric_{attr}"] = v
        return kids
