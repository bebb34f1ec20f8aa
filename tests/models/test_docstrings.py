"""The examples in the docstrings of models, optimizers, losses and metrics run."""
import doctest
import importlib

import pytest

import layerkit
import layerkit.layers
import layerkit.models

MODULES = ["layerkit.models.model", "layerkit.models.trainer", "layerkit.models.sequential",
           "layerkit.models.functional",
           "layerkit.optimizers.sgd", "layerkit.optimizers.adam",
           "layerkit.optimizers.schedules", "layerkit.losses",
           "layerkit.metrics.reduction_metrics", "layerkit.metrics.accuracy_metrics",
           "layerkit.metrics.confusion_metrics"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    # The examples use lk.Model / lk.Sequential / lk.Input, whether or not the package
    # __init__ exports them yet.
    for attr in ("Model", "Sequential", "Input"):
        if not hasattr(layerkit, attr):
            monkeypatch.setattr(layerkit, attr, getattr(layerkit.models, attr), raising=False)
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.attempted > 0 and result.failed == 0
