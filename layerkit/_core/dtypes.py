"""TensorFlow-style dtype objects (``lk.float32``, ``lk.int32``, ...) over NumPy dtypes.

A :class:`DType` wraps one ``numpy.dtype`` and is accepted wherever NumPy or layerkit
accept a dtype: NumPy reads its ``dtype`` attribute (``np.zeros(3, lk.float32)``), it
compares and hashes like that NumPy dtype (``t.dtype == lk.float32``,
``lk.float32 == np.float32``, ``lk.float32 == 'float32'``, dict keys), and it carries
TensorFlow's properties (``is_floating``, ``as_numpy_dtype``, ``min``, ``max``, ...).
``Tensor.dtype`` itself stays a ``numpy.dtype``.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

__all__ = ["DType", "as_dtype", "float16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
           "half", "double"]

# TensorFlow's DataType enum values (``DType.as_datatype_enum``).
_ENUMS = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
          "complex64": 8, "int64": 9, "bool": 10, "uint16": 17, "complex128": 18,
          "float16": 19, "uint32": 22, "uint64": 23}
NAMES = tuple(_ENUMS)
# TensorFlow's extra spellings (tf.as_dtype('float') is float32, 'double' float64, ...).
_ALIASES = {"float": "float32", "half": "float16", "double": "float64",
            "cfloat": "complex64", "cdouble": "complex128"}
# Types TensorFlow has and NumPy does not.
_UNSUPPORTED = ("bfloat16", "string", "resource", "variant", "qint8", "quint8", "qint16",
                "quint16", "qint32", "float8_e4m3fn", "float8_e5m2", "int4", "uint4")


class DType:
    """A dtype in TensorFlow's form (``<dtype: 'float32'>``), backed by a NumPy dtype.

    Use the constants (``lk.float32``, ``lk.int64``, ...) or :func:`as_dtype`; there is
    one object per dtype. NumPy accepts it as a dtype (it reads the ``dtype``
    attribute), it equals and hashes like the NumPy dtype, and it has TensorFlow's
    properties.

    Examples:
        >>> import layerkit as lk, numpy as np
        >>> lk.float32
        lk.float32
        >>> print(lk.float32)
        <dtype: 'float32'>
        >>> np.zeros(2, lk.float32).dtype == lk.float32, lk.int32.max
        (True, 2147483647)
    """

    __slots__ = ("dtype", "name")

    def __init__(self, name: str) -> None:
        # ``dtype`` is what NumPy reads when it is given this object as a dtype.
        self.dtype = np.dtype(name)
        self.name = name

    # ---- TensorFlow's properties ------------------------------------------------------
    @property
    def as_numpy_dtype(self) -> type:
        """The NumPy scalar type (``np.float32``)."""
        return self.dtype.type

    @property
    def as_datatype_enum(self) -> int:
        """TensorFlow's DataType enum value (float32: 1, int32: 3, ...)."""
        return _ENUMS[self.name]

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def real_dtype(self) -> DType:
        """float32 for complex64, float64 for complex128, else this dtype."""
        return {"complex64": FLOAT32, "complex128": _BY_NAME["float64"]}.get(self.name, self)

    @property
    def is_floating(self) -> builtins.bool:
        return self.dtype.kind == "f"

    @property
    def is_integer(self) -> builtins.bool:
        return self.dtype.kind in "iu"

    @property
    def is_unsigned(self) -> builtins.bool:
        return self.dtype.kind in "ub"

    @property
    def is_complex(self) -> builtins.bool:
        return self.dtype.kind == "c"

    @property
    def is_bool(self) -> builtins.bool:
        return self.dtype.kind == "b"

    @property
    def is_quantized(self) -> builtins.bool:
        return False

    @property
    def is_numpy_compatible(self) -> builtins.bool:
        return True

    @property
    def size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def min(self) -> Any:
        """The smallest value (a NumPy float for float dtypes, an int for integers).

        Raises:
            TypeError: bool and complex dtypes have none (as in TensorFlow).
        """
        return self._limit("minimum", 0)

    @property
    def max(self) -> Any:
        """The largest value. Raises ``TypeError`` for bool and complex dtypes."""
        return self._limit("maximum", 1)

    @property
    def limits(self) -> tuple:
        """``(min, max)`` of an integer dtype, ``(0, True)`` for bool (TensorFlow's values).

        Raises:
            ValueError: float and complex dtypes have no ``limits`` in TensorFlow.
        """
        if self.is_bool:
            return (0, True)
        if not self.is_integer:
            raise ValueError(f"{self} does not have defined limits.")
        return (self.min, self.max)

    def _limit(self, what: str, i: int):
        kind = self.dtype.kind
        if kind == "f":
            info = np.finfo(self.dtype)
            return self.dtype.type(info.max if i else info.min)
        if kind in "iu":
            iinfo = np.iinfo(self.dtype)
            return int(iinfo.max if i else iinfo.min)
        raise TypeError(f"Cannot find {what} value of {self} with type {self}.")

    def is_compatible_with(self, other: Any) -> builtins.bool:
        """Whether a value of dtype ``other`` may be used where this dtype is expected."""
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    # ---- comparisons, hashing, printing -------------------------------------------------
    def __eq__(self, other) -> builtins.bool:
        # TensorFlow's rule: equal to whatever as_dtype maps to this dtype ('float32',
        # np.float32, np.dtype('float32'), 'float', Python's float, ...).
        if other is self:
            return True
        if other is None:
            return False
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other) -> builtins.bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.dtype)  # == hash(np.dtype(...)): dicts keyed either way agree

    def __repr__(self) -> str:
        return f"lk.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: '{self.name}'>"

    def __copy__(self) -> DType:
        return self

    def __deepcopy__(self, memo) -> DType:
        return self

    def __reduce__(self):
        return as_dtype, (self.name,)

    def __getattr__(self, name: str):
        # The rest of numpy.dtype's interface (kind, itemsize, char, type, ...), so code
        # that expects a numpy.dtype keeps working when given a DType.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dtype, name)


_BY_NAME = {n: DType(n) for n in NAMES}
_BY_NP = {d.dtype: d for d in _BY_NAME.values()}

float16 = half = _BY_NAME["float16"]
float32 = FLOAT32 = _BY_NAME["float32"]
float64 = double = _BY_NAME["float64"]
int8 = _BY_NAME["int8"]
int16 = _BY_NAME["int16"]
int32 = _BY_NAME["int32"]
int64 = _BY_NAME["int64"]
uint8 = _BY_NAME["uint8"]
uint16 = _BY_NAME["uint16"]
uint32 = _BY_NAME["uint32"]
uint64 = _BY_NAME["uint64"]
bool = _BY_NAME["bool"]  # TensorFlow's name (the class above uses builtins.bool)
complex64 = _BY_NAME["complex64"]
complex128 = _BY_NAME["complex128"]


def as_dtype(type_value: Any) -> DType:
    """The :class:`DType` for a dtype name, NumPy type or dtype, or DType (TF's rule).

    ``'float'`` and Python's ``float`` mean float32 and Python's ``int`` int32, as for
    Python literals; ``'half'``/``'double'`` are float16/float64.

    Raises:
        TypeError: the value names no dtype, or one NumPy has no type for (``bfloat16``,
            ``string``).

    Examples:
        >>> import layerkit as lk, numpy as np
        >>> lk.dtypes.as_dtype(np.float64) is lk.float64
        True
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        if type_value in _UNSUPPORTED:
            raise TypeError(f"as_dtype: dtype {type_value!r} is not supported by layerkit: "
                            f"NumPy, which holds layerkit's values, has no such type")
        type_value = _ALIASES.get(type_value, type_value)
    elif type_value is float:
        type_value = "float32"
    elif type_value is int:
        type_value = "int32"
    try:
        d = np.dtype(type_value)
    except (TypeError, ValueError):
        raise TypeError(f"as_dtype: cannot convert {type_value!r} to a dtype; expected a "
                        f"dtype name such as 'float32', a NumPy type or an lk dtype "
                        f"(lk.float32, ...)") from None
    out = _BY_NP.get(d)
    if out is None:
        raise TypeError(f"as_dtype: NumPy dtype {d} has no layerkit dtype; supported: "
                        f"{', '.join(NAMES)}")
    return out
