"""ignore_errors: drops the elements whose production raised an error."""
from __future__ import annotations

import logging

from layerkit.data.node import Node, NodeIterator, ScalarStateIterator

_log = logging.getLogger("layerkit.data")


class IgnoreErrorsNode(Node):
    """Skips input elements that raise (an error in ``map``, a bad file, ...)."""

    name = "ignore_errors"

    def __init__(self, source: Node, log_warning: bool) -> None:
        super().__init__(source)
        self.log_warning = bool(log_warning)

    def make_iterator(self, ctx):
        return IgnoreErrorsIterator(self, self.inputs[0].make_iterator(ctx))

    def _compute_spec(self):
        return self.inputs[0].element_spec()


class IgnoreErrorsIterator(ScalarStateIterator):
    __slots__ = ("_up", "_log", "_dropped")
    kind = "ignore_errors"
    _saved = (("dropped", "_dropped", int),)

    def __init__(self, node: IgnoreErrorsNode, up: NodeIterator) -> None:
        self._up = up
        self._log = node.log_warning
        self._dropped = 0

    def __next__(self):
        while True:
            try:
                return next(self._up)
            except StopIteration:
                raise
            except Exception as e:
                self._dropped += 1
                if self._log:
                    _log.warning("Dataset.ignore_errors: an input element was dropped "
                                 "because it raised %s: %s", type(e).__name__, e)
