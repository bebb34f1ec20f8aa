"""The examples in the layers' docstrings run and print what they say."""
import doctest
import importlib

import pytest

MODULES = ["layerkit.layers", "layerkit.layers.layer", "layerkit.layers.core",
           "layerkit.layers.conv", "layerkit.layers.pooling", "layerkit.layers.normalization",
           "layerkit.layers.merge", "layerkit.layers.recurrent", "layerkit.layers.attention",
           "layerkit.layers.activation_layers", "layerkit.layers.masking",
           "layerkit.layers.reshaping", "layerkit.layers.regularization",
           "layerkit.layers.recurrent_cells",
           "layerkit.initializers", "layerkit.regularizers"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.attempted > 0 and result.failed == 0
