"""Models: ``Model`` (subclassed or functional), ``Sequential`` and ``Input``; whole-model
saving (``load_model``, ``save_model``, ``model_from_json``) and ``clone_model``."""
from layerkit.models.cloning import clone_model
from layerkit.models.functional import Input
from layerkit.models.model import Model, pack_x_y_sample_weight, unpack_x_y_sample_weight
from layerkit.models.sequential import Sequential
from layerkit.saving.saving_lib import load_model, model_from_json, save_model

__all__ = ["Model", "Sequential", "Input", "unpack_x_y_sample_weight", "pack_x_y_sample_weight",
           "load_model", "save_model", "model_from_json", "clone_model"]
