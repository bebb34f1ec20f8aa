"""filter: keeps the elements for which a user predicate returns True."""
from __future__ import annotations

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit.data.node import Node, NodeIterator, ScalarStateIterator, annotate, fn_note


class FilterNode(Node):
    """Keeps the elements for which ``predicate`` returns True."""

    name = "filter"

    def __init__(self, source: Node, predicate) -> None:
        super().__init__(source)
        if not callable(predicate):
            raise TypeError(f"Dataset.filter: expected a callable, received "
                            f"{type(predicate).__name__}")
        self.predicate = predicate

    def make_iterator(self, ctx):
        return FilterIterator(self, self.inputs[0].make_iterator(ctx))

    def _compute_spec(self):
        return self.inputs[0].element_spec()


class FilterIterator(ScalarStateIterator):
    __slots__ = ("_up", "_fn", "_count")
    kind = "filter"
    _saved = (("count", "_count", int),)

    def __init__(self, node: FilterNode, up: NodeIterator) -> None:
        self._up = up
        self._fn = node.predicate
        self._count = 0

    def __next__(self):
        up = self._up
        fn = self._fn
        while True:
            elem = next(up)
            i = self._count
            self._count = i + 1
            try:
                keep = fn(*elem) if type(elem) is tuple else fn(elem)
                keep = as_bool(keep, "filter")
            except Exception as e:
                raise annotate(e, fn_note(fn, i, "filter"))  # noqa: B904 (the caught error itself)
            if keep:
                return elem


def as_bool(value, what: str = "filter") -> bool:
    """A predicate's result as a bool (a scalar bool Tensor/array, or a Python bool)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    a = np.asarray(value._v if isinstance(value, Tensor) else value)
    if a.shape != () or a.dtype != np.bool_:
        raise TypeError(f"the {what} predicate must return a scalar bool, received "
                        f"{a.dtype.name} with shape {a.shape}")
    return bool(a)
