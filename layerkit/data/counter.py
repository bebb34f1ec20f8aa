"""Dataset.counter: ``start, start + step, ...`` without end."""
from __future__ import annotations

import sys

from layerkit.data.node import INFINITE
from layerkit.data.sources import RangeNode


class CounterNode(RangeNode):
    """An infinite range (its iterator is range's, with no reachable stop)."""

    name = "counter"

    def __init__(self, start: int, step: int, dtype) -> None:
        super().__init__(start, start + step, step, dtype)
        self.n = sys.maxsize  # never reached: 2**63 elements

    def cardinality(self) -> int:
        return INFINITE
