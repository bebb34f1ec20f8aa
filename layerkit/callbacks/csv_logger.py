"""``CSVLogger``: one CSV row per epoch."""
from __future__ import annotations

import csv
import os
from typing import Any

import numpy as np

from layerkit._core.types import Logs, PathLike
from layerkit.callbacks.callback import Callback


def _cell(value):
    """A log value as a CSV cell: strings and numbers as they are, sequences as
    ``"[a, b]"`` (Keras's rendering)."""
    if isinstance(value, str) or np.ndim(value) == 0:
        return value
    return f'"[{", ".join(map(str, np.ravel(value).tolist()))}]"'


class CSVLogger(Callback):
    """Write one CSV row per epoch: ``epoch`` (0-based) then the log keys, sorted.

    Keras 3's ``keras.callbacks.CSVLogger``. The columns are fixed by the first epoch;
    when it has no ``val_*`` keys, ``val_`` columns are added for every key (so epochs
    with validation fit the same header), and keys missing from an epoch are written
    as ``NA``.

    Args:
        filename: the CSV file.
        separator: the field separator.
        append: append to an existing file (the header is written only if it is empty)
            instead of overwriting it.

    Examples:
        >>> import layerkit as lk
        >>> logger = lk.callbacks.CSVLogger("training.csv", separator=";")
    """

    def __init__(self, filename: PathLike, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer: Any = None      # a csv.DictWriter while training
        self.keys: list | None = None
        self.append_header = True
        self.csv_file: Any = None    # the open file while training

    def on_train_begin(self, logs: Logs = None) -> None:
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not f.readline()
            mode = "a"
        else:
            mode = "w"
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="")
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys += [f"val_{k}" for k in self.keys]
        if self.writer is None:
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         delimiter=self.sep, extrasaction="ignore")
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((k, _cell(logs.get(k, "NA"))) for k in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs: Logs = None) -> None:
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None
