"""Automatic differentiation: tapes, gradient functions, custom gradients, checking."""
from layerkit.autodiff.api import gradients_function, value_and_gradients_function
from layerkit.autodiff.custom_gradient import custom_gradient
from layerkit.autodiff.function import (
    TensorSpec,
    function,
    numpy_function,
    print,
    py_function,
    python_call,
)
from layerkit.autodiff.tape import GradientTape

__all__ = ["GradientTape", "gradients_function", "value_and_gradients_function",
           "custom_gradient", "function", "TensorSpec", "print", "py_function",
           "numpy_function", "python_call"]
