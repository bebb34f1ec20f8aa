"""Graphs: ``lk.function`` traces eager code into optimised, fused graphs.

Modules: ``trace`` (the tracing recorder and tensor), ``graph`` (the IR), ``passes``
(constant folding, CSE, dead-node removal), ``fuse`` (elementwise regions),
``numexpr_kernel`` (numexpr compile cache and the measured dispatch rule), ``executor``
(a graph compiled to one flat Python function over arrays), ``signature``
(TensorSpec, cache keys, retrace reasons), ``api`` (``function``) and ``pyfunc``
(``print``, ``py_function``, ``numpy_function``: Python calls as graph nodes, see
``layerkit._core.effects``).
"""
from layerkit._core.effects import python_call
from layerkit.autodiff.function.api import (
    ConcreteFunction,
    EagerFallbackWarning,
    Function,
    RetracingWarning,
    function,
)
from layerkit.autodiff.function.pyfunc import numpy_function, print, py_function
from layerkit.autodiff.function.signature import TensorSpec
from layerkit.autodiff.function.trace import TracingError

__all__ = ["function", "TensorSpec", "Function", "ConcreteFunction", "TracingError",
           "RetracingWarning", "EagerFallbackWarning", "python_call", "print", "py_function",
           "numpy_function"]
