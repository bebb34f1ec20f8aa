"""Automatic differentiation: tapes, gradient functions, custom gradients."""
from layerkit.autodiff.tape import GradientTape

__all__ = ["GradientTape"]
