"""``lk.callbacks.TensorBoard``: training logs for TensorBoard, as Keras 3 writes them.

Event files are written by :mod:`layerkit.io.tfevents` (no TensorFlow needed); install
``tensorboard`` (the ``tensorboard`` extra) only to view them:
``tensorboard --logdir logs``.
"""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from layerkit._core.types import Logs
from layerkit.callbacks.callback import Callback
from layerkit.io import tfevents
from layerkit.utils.model_visualization import layer_graph

__all__ = ["TensorBoard"]


def _weight_paths(layer, prefix: str, out: list, seen: set) -> None:
    """(``outer/inner/kernel``, Variable) for a layer's weights, Keras's ``weight.path``."""
    seen.add(id(layer))
    names = layer._var_names
    for v in layer._trainable_vars + layer._non_trainable_vars:
        out.append((f"{prefix}/{names[id(v)]}", v))
    for sub in layer.layers:
        if id(sub) not in seen:
            _weight_paths(sub, f"{prefix}/{sub.name}", out, seen)


def model_graph(model) -> bytes | None:
    """A ``GraphDef`` of a functional or Sequential model's layers (one node per layer,
    op = class name, edges between layers, ``_output_shapes``); None for other models,
    whose structure is only known by running them (Keras writes none either)."""
    nodes = layer_graph(model)
    if nodes is None:
        return None
    return tfevents.graph_def(
        tfevents.node_def(n.name, n.class_name, n.inbound,
                          {"_output_shapes": n.output_shapes} if n.output_shapes else None)
        for n in nodes)


class TensorBoard(Callback):
    """Write losses, metrics, the learning rate, weight histograms and the model graph
    for TensorBoard (Keras 3's callback: same arguments, directories and tags).

    Under ``log_dir/train``: ``epoch_<metric>`` per epoch (``epoch_loss``,
    ``epoch_learning_rate``, ...), ``batch_<metric>`` every ``update_freq`` batches,
    ``<layer>/<weight>/histogram`` every ``histogram_freq`` epochs, and the layer graph
    of a functional or Sequential model. Under ``log_dir/validation``: the ``val_*``
    metrics as ``epoch_<metric>``, and ``evaluation_<metric>_vs_iterations`` at the
    optimizer's step after every evaluation.

    Args:
        log_dir: the directory of the logs (``tensorboard --logdir log_dir``).
        histogram_freq: epochs between weight histograms (0: none).
        write_graph: write the model's layer graph.
        write_images: not supported (must be False).
        write_steps_per_second: also log training steps per second.
        update_freq: ``'epoch'``, ``'batch'`` (= 1) or an int N: write batch-level
            metrics every N batches.
        profile_batch: must be 0 (profiling needs TensorFlow or JAX, as in Keras).
        embeddings_freq: not supported (0 / None).
        embeddings_metadata: not supported (0 / None).

    Raises:
        ValueError: an invalid ``update_freq`` or ``histogram_freq``, or profiling.
        NotImplementedError: ``write_images`` or ``embeddings_freq``.

    Examples:
        >>> import layerkit as lk
        >>> tb = lk.callbacks.TensorBoard(log_dir="logs")  # doctest: +SKIP
        >>> model.fit(x, y, epochs=3, callbacks=[tb])  # doctest: +SKIP
    """

    def __init__(self, log_dir: str = "logs", histogram_freq: int = 0, write_graph: bool = True,
                 write_images: bool = False, write_steps_per_second: bool = False,
                 update_freq: str | int = "epoch", profile_batch: int = 0, embeddings_freq: int = 0,
                 embeddings_metadata: Any = None) -> None:
        super().__init__()
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and not (isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             f"int; received {update_freq!r}")
        if not isinstance(histogram_freq, int) or histogram_freq < 0:
            raise ValueError(f"TensorBoard: histogram_freq must be an int >= 0; received "
                             f"{histogram_freq!r}")
        if profile_batch:
            raise ValueError(f"TensorBoard: profiling is not available in layerkit (Keras "
                             f"offers it only with the TensorFlow and JAX backends); "
                             f"received profile_batch={profile_batch!r} (must be 0)")
        if write_images:
            raise NotImplementedError("TensorBoard: write_images=True is not supported")
        if embeddings_freq or embeddings_metadata:
            raise NotImplementedError("TensorBoard: embeddings_freq/embeddings_metadata are "
                                      "not supported")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = bool(write_graph)
        self.write_steps_per_second = bool(write_steps_per_second)
        self.update_freq: str | int = update_freq
        self.needs_batch_logs = update_freq != "epoch"
        self._writers: dict = {}
        self._global_train_batch = 0
        self._batch_start = 0.0
        self._epoch_start = 0.0
        self._epoch_iterations = 0

    # ---- writers ------------------------------------------------------------------------
    def _writer(self, which: str) -> tfevents.EventFileWriter:
        w = self._writers.get(which)
        if w is None:
            w = self._writers[which] = tfevents.EventFileWriter(
                os.path.join(self.log_dir, which))
        return w

    def _close_writers(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers = {}

    def _iterations(self) -> int:
        optimizer = getattr(self.model, "optimizer", None)
        it = getattr(optimizer, "iterations", None)
        return int(np.asarray(it)) if it is not None else 0

    # ---- hooks -------------------------------------------------------------------------
    def on_train_begin(self, logs: Logs = None) -> None:
        self._global_train_batch = 0
        if self.write_graph:
            graph = model_graph(self.model)
            if graph is not None:
                self._writer("train").add_graph(graph)

    def on_train_end(self, logs: Logs = None) -> None:
        self._close_writers()

    def on_train_batch_begin(self, batch: int, logs: Logs = None) -> None:
        self._global_train_batch += 1
        if self.write_steps_per_second:
            self._batch_start = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None:
        step = self._global_train_batch
        if not isinstance(self.update_freq, int) or step % self.update_freq:
            return
        writer = self._writer("train")
        if self.write_steps_per_second:
            elapsed = time.perf_counter() - self._batch_start
            writer.add_scalar("batch_steps_per_second", 1.0 / max(elapsed, 1e-9), step)
        for name, value in (logs or {}).items():
            writer.add_scalar(f"batch_{name}", value, step)

    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None:
        if self.write_steps_per_second:
            self._epoch_start = time.perf_counter()
            self._epoch_iterations = self._iterations()

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        logs = dict(logs or {})
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        lr = getattr(getattr(self.model, "optimizer", None), "learning_rate", None)
        if lr is not None:
            train["learning_rate"] = float(np.asarray(lr))
        if self.write_steps_per_second:
            elapsed = max(time.perf_counter() - self._epoch_start, 1e-9)
            train["steps_per_second"] = (self._iterations() - self._epoch_iterations) / elapsed
        for which, values in (("train", train), ("validation", val)):
            if values:
                writer = self._writer(which)
                for name, value in values.items():
                    writer.add_scalar(f"epoch_{name}", value, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            writer = self._writer("train")
            pairs: list = []
            seen: set = set()
            for layer in self.model.layers:
                if id(layer) not in seen:
                    _weight_paths(layer, layer.name, pairs, seen)
            for path, var in pairs:
                writer.add_histogram(f"{path}/histogram", np.asarray(var._v), epoch)
        for w in self._writers.values():
            w.flush()

    def on_test_end(self, logs: Logs = None) -> None:
        if getattr(self.model, "optimizer", None) is None or not logs:
            return
        writer = self._writer("validation")
        step = self._iterations()
        for name, value in logs.items():
            writer.add_scalar(f"evaluation_{name}_vs_iterations", value, step)
        writer.flush()
