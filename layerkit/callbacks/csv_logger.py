"""``CSVLogger``: one CSV row per epoch."""
from __future__ import annotations

import csv
import os

from layerkit.callbacks.callback import Callback


class CSVLogger(Callback):
    """Write one CSV row per epoch (``epoch`` then the log keys, sorted).

    Args:
        filename: the CSV file.
        separator: the field separator.
        append: append to an existing file instead of overwriting it.
    """

    def __init__(self, filename: str, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self._file = None
        self._writer = None
        self.keys = None

    def on_train_begin(self, logs=None) -> None:
        header_needed = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename) as f:
                header_needed = not f.read(1)
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._header_needed = header_needed
        self.keys = None

    def on_epoch_end(self, epoch, logs=None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self.keys,
                                          delimiter=self.sep, extrasaction="ignore")
            if self._header_needed:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update({k: logs.get(k, "NA") for k in self.keys})
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs=None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
