"""Models: ``Model`` (subclassed or functional), ``Sequential`` and ``Input``."""
from layerkit.models.functional import Input
from layerkit.models.model import Model, pack_x_y_sample_weight, unpack_x_y_sample_weight
from layerkit.models.sequential import Sequential

__all__ = ["Model", "Sequential", "Input", "unpack_x_y_sample_weight", "pack_x_y_sample_weight"]
