"""take_while: the elements before the first one for which the predicate is False."""
from __future__ import annotations

from layerkit.data.filter import as_bool
from layerkit.data.node import Node, NodeIterator, ScalarStateIterator, annotate, fn_note


class TakeWhileNode(Node):
    """Stops at the first element for which ``predicate`` returns False."""

    name = "take_while"

    def __init__(self, source: Node, predicate) -> None:
        super().__init__(source)
        if not callable(predicate):
            raise TypeError(f"Dataset.take_while: expected a callable, received "
                            f"{type(predicate).__name__}")
        self.predicate = predicate

    def make_iterator(self, ctx):
        return TakeWhileIterator(self, self.inputs[0].make_iterator(ctx))

    def _compute_spec(self):
        return self.inputs[0].element_spec()


class TakeWhileIterator(ScalarStateIterator):
    __slots__ = ("_up", "_fn", "_count", "_done")
    kind = "take_while"
    _saved = (("count", "_count", int), ("done", "_done", bool))

    def __init__(self, node: TakeWhileNode, up: NodeIterator) -> None:
        self._up = up
        self._fn = node.predicate
        self._count = 0
        self._done = False

    def __next__(self):
        if self._done:
            raise StopIteration
        elem = next(self._up)
        i = self._count
        self._count = i + 1
        fn = self._fn
        try:
            keep = as_bool(fn(*elem) if type(elem) is tuple else fn(elem), "take_while")
        except Exception as e:
            raise annotate(e, fn_note(fn, i, "take_while"))  # noqa: B904
        if not keep:
            self._done = True
            raise StopIteration
        return elem
