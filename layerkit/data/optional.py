"""``lk.experimental.Optional``: a value that may be absent (``tf.experimental.Optional``).

``Iterator.get_next_as_optional()`` returns one, so a loop can test for the end of a
pass without catching an exception.
"""
from __future__ import annotations

from typing import Any

from layerkit import errors


class Optional:
    """Either holds one (possibly nested) value or is empty.

    >>> import layerkit as lk
    >>> lk.experimental.Optional.from_value(3).get_value()
    3
    >>> lk.experimental.Optional.empty(None).has_value()
    False
    """

    __slots__ = ("_value", "_has", "_spec")

    def __init__(self, value: Any = None, has_value: bool = False,
                 element_spec: Any = None) -> None:
        self._value = value
        self._has = bool(has_value)
        self._spec = element_spec

    @staticmethod
    def from_value(value: Any) -> Optional:
        """An Optional holding ``value``."""
        return Optional(value, True)

    @staticmethod
    def empty(element_spec: Any) -> Optional:
        """An empty Optional for values described by ``element_spec``."""
        return Optional(None, False, element_spec)

    def has_value(self) -> bool:
        """Whether a value is present."""
        return self._has

    def get_value(self) -> Any:
        """The value.

        Raises:
            lk.errors.InvalidArgumentError: the Optional is empty (as in TensorFlow).
        """
        if not self._has:
            raise errors.InvalidArgumentError(
                None, None, "Optional.get_value: the Optional has no value")
        return self._value

    @property
    def element_spec(self) -> Any:
        return self._spec

    def __repr__(self) -> str:
        return f"Optional({self._value!r})" if self._has else "Optional(empty)"
