"""TensorShape: TensorFlow's shape object, with ``None`` for unknown dimensions.

``Tensor.shape`` stays a tuple of ints (API.md): a :class:`StaticShape`, a tuple that
also answers TensorFlow's shape methods (``as_list()``, ``rank``, ``num_elements()``,
...), so ``x.shape.as_list()`` ports unchanged. ``lk.TensorShape`` is for code that
builds, compares and merges partially known shapes as TensorFlow programs do. It
compares equal to tuples and lists with the same dimensions, so
``t.shape == lk.TensorShape([2, 3])`` holds.
"""
from __future__ import annotations

import operator
from typing import Any


def _dim(d, where: str):
    if d is None:
        return None
    value = getattr(d, "value", d)  # TF's Dimension objects carry .value
    if value is None:
        return None
    try:
        i = operator.index(value)
    except TypeError:
        raise TypeError(f"{where}: dimensions must be ints or None, received "
                        f"{d!r} ({type(d).__name__})") from None
    if i < 0:
        if i == -1:  # TensorFlow's proto convention for an unknown dimension
            return None
        raise ValueError(f"{where}: dimensions must be >= 0 or None (unknown), received {i}")
    return i


def as_shape(shape) -> TensorShape:
    """``shape`` as a :class:`TensorShape` (TensorShapes are returned unchanged)."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


class TensorShape:
    """A shape whose rank and dimensions may be unknown (``None``), as ``tf.TensorShape``.

    Args:
        dims: an iterable of ints and None, an int (a 1-D shape), or None for a shape of
            unknown rank.

    Raises:
        TypeError: a dimension is not an int or None.
        ValueError: a dimension is negative (``-1`` means unknown, as in TF's protos).

    Examples:
        >>> import layerkit as lk
        >>> s = lk.TensorShape([None, 3])
        >>> s.rank, s[1], s.as_list(), s.is_compatible_with([8, 3])
        (2, 3, [None, 3], True)
        >>> s.merge_with([8, None])
        TensorShape([8, 3])
    """

    __slots__ = ("_dims",)

    def __init__(self, dims: Any = None) -> None:
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, (str, bytes)):
            raise TypeError(f"TensorShape: expected a sequence of ints and None, received "
                            f"{dims!r}")
        else:
            try:
                items = iter(dims)
            except TypeError:
                items = (dims,)  # TensorShape(3) is the 1-D shape [3]
            self._dims = tuple(_dim(d, "TensorShape") for d in items)

    # ---- rank and dimensions ----------------------------------------------------------
    @property
    def rank(self) -> int | None:
        """The number of dimensions, or None if unknown."""
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self) -> list | None:
        """The dimensions as a list of ints and None (None if the rank is unknown)."""
        return None if self._dims is None else list(self._dims)

    def as_list(self) -> list:
        """The dimensions as a list of ints and None.

        Raises:
            ValueError: the rank is unknown.
        """
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            # TensorFlow: any dimension of an unknown shape is unknown.
            return TensorShape(None) if isinstance(key, slice) else None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __bool__(self) -> bool:
        return self._dims is not None

    def num_elements(self) -> int | None:
        """The product of the dimensions, or None if any is unknown."""
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims or ():
            n *= d
        return n

    def is_fully_defined(self) -> bool:
        """Whether the rank and every dimension are known."""
        return self._dims is not None and None not in self._dims

    # ---- compatibility --------------------------------------------------------------------
    def is_compatible_with(self, other: Any) -> bool:
        """Whether some fully defined shape fits both this and ``other`` (None matches
        any size; an unknown rank matches any rank)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raises ``ValueError`` if ``other`` is not compatible with this shape."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def merge_with(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both (known dimensions win).

        Raises:
            ValueError: the shapes are not compatible.
        """
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape that both this and ``other`` are compatible with:
        dimensions that differ (or ranks that differ) become unknown."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other: Any) -> TensorShape:
        """This shape's dimensions followed by ``other``'s (unknown if either rank is)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __add__(self, other) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other) -> TensorShape:
        return as_shape(other).concatenate(self)

    def with_rank(self, rank: int) -> TensorShape:
        """This shape with rank ``rank`` (an unknown rank becomes ``rank`` unknown dims).

        Raises:
            ValueError: the shape has another known rank.
        """
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> TensorShape:
        """This shape, checked to have at least ``rank`` dimensions (ValueError if not)."""
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        """This shape, checked to have at most ``rank`` dimensions (ValueError if not)."""
        if self._dims is not None and len(self._dims) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    # ---- comparisons and printing --------------------------------------------------------
    def __eq__(self, other) -> bool:
        """Same rank and the same dimensions (``None == None``, as in TF 2)."""
        if isinstance(other, (list, tuple)):
            try:
                other = TensorShape(other)
            except (TypeError, ValueError):
                return False
        elif not isinstance(other, TensorShape):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return "TensorShape(None)" if self._dims is None else f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({self._dims[0]},)"
        return "(" + ", ".join(str(d) for d in self._dims) + ")"


class StaticShape(tuple):
    """The shape of a Tensor: a tuple of ints with ``tf.TensorShape``'s methods.

    It is a plain tuple for every tuple use (equality, hashing, ``+``, unpacking, printing
    as ``(2, 3)``); slicing keeps the methods. Instances are cached per shape, so reading
    ``t.shape`` allocates nothing after the first time a shape is seen.

    Examples:
        >>> import layerkit as lk
        >>> s = lk.ones((2, 3)).shape
        >>> s, s.as_list(), s.rank, s[1:].as_list(), s.num_elements()
        ((2, 3), [2, 3], 2, [3], 6)
    """

    __slots__ = ()

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self)

    ndims = rank

    @property
    def dims(self) -> list:
        """The dimensions as a list of ints."""
        return list(self)

    def as_list(self) -> list:
        """The dimensions as a list of ints."""
        return list(self)

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return static_shape(item) if type(key) is slice else item

    def num_elements(self) -> int | None:
        """The product of the dimensions (None if one is unknown: a ``None`` dimension
        of a tensor traced by ``lk.function``)."""
        n = 1
        for d in self:
            if d is None:
                return None
            n *= d
        return n

    def is_fully_defined(self) -> bool:
        """Whether every dimension is known (always, except while tracing with ``None``
        dimensions)."""
        return None not in self

    def as_shape(self) -> TensorShape:
        """This shape as a :class:`TensorShape`."""
        return TensorShape(self)

    def is_compatible_with(self, other) -> bool:
        """See :meth:`TensorShape.is_compatible_with`."""
        return TensorShape(self).is_compatible_with(other)

    def assert_is_compatible_with(self, other) -> None:
        """See :meth:`TensorShape.assert_is_compatible_with`."""
        TensorShape(self).assert_is_compatible_with(other)

    def merge_with(self, other) -> TensorShape:
        """See :meth:`TensorShape.merge_with`."""
        return TensorShape(self).merge_with(other)

    def concatenate(self, other) -> TensorShape:
        """See :meth:`TensorShape.concatenate`."""
        return TensorShape(self).concatenate(other)

    def with_rank(self, rank: int) -> TensorShape:
        """See :meth:`TensorShape.with_rank`."""
        return TensorShape(self).with_rank(rank)

    def with_rank_at_least(self, rank: int) -> TensorShape:
        """See :meth:`TensorShape.with_rank_at_least`."""
        return TensorShape(self).with_rank_at_least(rank)

    def assert_has_rank(self, rank: int) -> None:
        """Raises ``ValueError`` unless this shape has rank ``rank``."""
        TensorShape(self).with_rank(rank)


_STATIC: dict = {}


def static_shape(dims: tuple) -> StaticShape:
    """The cached :class:`StaticShape` for a tuple of ints."""
    try:
        return _STATIC[dims]
    except KeyError:
        if len(_STATIC) > 4096:  # many distinct shapes (e.g. varying sequence lengths)
            _STATIC.clear()
        s = _STATIC[dims] = StaticShape(dims)
        return s
    except TypeError:  # an unhashable shape never happens for arrays; be safe
        return StaticShape(dims)
