"""assert_cardinality: declares the number of elements, checked while iterating."""
from __future__ import annotations

from layerkit.data.node import INFINITE, Node, NodeIterator, ScalarStateIterator


class AssertCardinalityNode(Node):
    """Passes the input on; raises if it does not have ``expected`` elements."""

    name = "assert_cardinality"

    def __init__(self, source: Node, expected: int) -> None:
        super().__init__(source)
        self.expected = int(expected)
        if self.expected < 0 and self.expected != INFINITE:
            raise ValueError(f"Dataset.assert_cardinality: expected a count >= 0 or "
                             f"INFINITE_CARDINALITY (-1), received {expected}")

    def make_iterator(self, ctx):
        return AssertCardinalityIterator(self, self.inputs[0].make_iterator(ctx))

    def cardinality(self) -> int:
        return self.expected

    def _compute_spec(self):
        return self.inputs[0].element_spec()


class AssertCardinalityIterator(ScalarStateIterator):
    __slots__ = ("_up", "_expected", "_count")
    kind = "assert_cardinality"
    _saved = (("count", "_count", int),)

    def __init__(self, node: AssertCardinalityNode, up: NodeIterator) -> None:
        self._up = up
        self._expected = node.expected
        self._count = 0

    def __next__(self):
        want = self._expected
        try:
            e = next(self._up)
        except StopIteration:
            if want == INFINITE or self._count < want:
                raise ValueError(
                    f"Dataset.assert_cardinality: input dataset was expected to contain "
                    f"{'infinitely many' if want == INFINITE else want} elements but "
                    f"contained only {self._count} elements.") from None
            raise
        self._count += 1
        if want != INFINITE and self._count > want:
            raise ValueError(f"Dataset.assert_cardinality: input dataset was expected to "
                             f"contain {want} elements but contained at least "
                             f"{self._count} elements.")
        return e
