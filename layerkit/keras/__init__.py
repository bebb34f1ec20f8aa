"""``lk.keras``: the Keras names under TensorFlow's spelling ``tf.keras``.

TensorFlow programs reach Keras as ``tf.keras.layers.Dense``, ``from tensorflow.keras
import layers`` or ``from tensorflow.keras.layers import Dense``; after renaming ``tf`` to
``lk`` (``tensorflow`` to ``layerkit``) all three forms work, because each submodule here
is the layerkit module of the same name (``lk.keras.layers is lk.layers``), registered in
``sys.modules`` so that ``from layerkit.keras.layers import Dense`` imports it too.

Examples:
    >>> import layerkit as lk
    >>> from layerkit.keras.layers import Dense
    >>> Dense is lk.keras.layers.Dense is lk.layers.Dense
    True
    >>> model = lk.keras.Sequential([lk.keras.Input((3,)), Dense(2)])
    >>> model.output_shape
    (None, 2)
"""
from __future__ import annotations

import sys

from layerkit import (
    callbacks,
    constraints,
    initializers,
    keras_ops,
    layers,
    losses,
    metrics,
    models,
    optimizers,
    random,
    regularizers,
    saving,
    utils,
)
from layerkit._core.context import name_scope
from layerkit._core.variable import Variable
from layerkit.initializers import Initializer
from layerkit.keras import (
    activations,
    backend,
    config,
    datasets,
    dtype_policies,
    mixed_precision,
    preprocessing,
    tree,
)
from layerkit.keras.mixed_precision import DTypePolicy
from layerkit.layers import InputSpec, Layer
from layerkit.layers.symbolic import SymbolicTensor as KerasTensor
from layerkit.losses import Loss
from layerkit.metrics import Metric
from layerkit.models import Model, Sequential
from layerkit.models.functional import Input
from layerkit.optimizers import Optimizer
from layerkit.regularizers import Regularizer

__version__ = "3.15.1"  # the Keras API version whose names and behaviour this follows
FloatDTypePolicy = DTypePolicy

def version() -> str:
    """The Keras API version layerkit follows (``keras.version()``)."""
    return __version__

ops = keras_ops   # keras.ops

__all__ = ["Input", "Model", "Sequential", "Layer", "Loss", "Metric", "Optimizer",
           "Initializer", "Regularizer", "InputSpec", "KerasTensor", "Variable", "DTypePolicy",
           "FloatDTypePolicy", "name_scope", "version", "config", "dtype_policies", "activations",
           "backend", "callbacks", "datasets",
           "constraints", "initializers", "layers", "losses", "metrics", "mixed_precision", "ops",
           "models", "optimizers", "preprocessing", "random", "regularizers", "saving", "tree",
           "utils"]

_ALIASES = {"callbacks": callbacks, "constraints": constraints,
            "initializers": initializers, "layers": layers, "losses": losses,
            "metrics": metrics, "models": models, "ops": keras_ops, "optimizers": optimizers,
            "optimizers.schedules": optimizers.schedules, "random": random,
            "regularizers": regularizers, "saving": saving, "utils": utils}


def _register(aliases: dict) -> None:
    """Make ``import layerkit.keras.<name>`` find the layerkit module of that name."""
    for name, module in aliases.items():
        sys.modules.setdefault(f"{__name__}.{name}", module)


_register(_ALIASES)
_register({"preprocessing.sequence": preprocessing.sequence,
           "preprocessing.image": preprocessing.image})
_register({f"datasets.{d}": getattr(datasets, d) for d in datasets.__all__})
