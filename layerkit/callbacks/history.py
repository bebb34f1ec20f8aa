"""``History``: the per-epoch logs ``fit`` returns."""
from __future__ import annotations

from layerkit._core.types import Logs
from layerkit.callbacks.callback import Callback


class History(Callback):
    """Records the epoch logs: ``history.history['loss']`` is a list with one float per epoch.

    ``fit`` returns it; ``history.epoch`` lists the epoch indices.
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: Logs = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self

    def plot(self, path: str = "training_curves.png", title: str | None = None) -> str:
        """Write the training curves (one panel per metric, ``val_*`` overlaid) as a PNG.

        Args:
            path: the output file.
            title: optional figure title.

        Returns:
            The path written.

        Raises:
            ImportError: matplotlib is not installed (it is the optional ``examples`` extra).
            ValueError: there is no history yet.
        """
        try:
            import matplotlib

            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError(
                "History.plot needs matplotlib, which is not installed. Install it with "
                "`pip install matplotlib` (or `pip install layerkit[examples]`)."
            ) from e
        names = [k for k in self.history if not k.startswith("val_")]
        names += [k[4:] for k in self.history if k.startswith("val_") and k[4:] not in names]
        if not names:
            raise ValueError("History.plot: nothing to plot (fit has not recorded any epoch)")
        fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.6), squeeze=False)
        epochs = [e + 1 for e in self.epoch] or None
        for ax, name in zip(axes[0], names):
            for key, style in ((name, "-o"), ("val_" + name, "--s")):
                if key in self.history:
                    ys = self.history[key]
                    xs = epochs if epochs and len(epochs) == len(ys) else range(1, len(ys) + 1)
                    ax.plot(list(xs), ys, style, markersize=3, label=key)
            ax.set_title(name)
            ax.set_xlabel("epoch")
            ax.grid(alpha=0.3)
            ax.legend()
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path
