"""``lk.dtypes``: TensorFlow's ``tf.dtypes`` (the dtype constants, ``DType``, ``as_dtype``
and ``cast``). The constants are also at top level: ``lk.float32``, ``lk.int64``, ...

    >>> import layerkit as lk
    >>> lk.dtypes.as_dtype("float32") is lk.float32, lk.float32.is_floating
    (True, True)
"""
from layerkit import cast
from layerkit._core.dtypes import (
    DType,
    as_dtype,
    bool,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

__all__ = ["DType", "as_dtype", "cast", "float16", "float32", "float64", "int8", "int16",
           "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex64",
           "complex128", "half", "double"]
