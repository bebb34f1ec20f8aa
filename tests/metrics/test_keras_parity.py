"""Every metric against results recorded once from Keras 3 on the same random data.

The data come from keras_metric_cases.py (NumPy, seeded); the fixture holds Keras's
result after each of two update_state calls (the second with sample weights) and its
get_config. Regenerate with tests/fixtures/make_keras_metrics.py.
"""
import json
import pathlib
import re
import warnings

import numpy as np
import pytest

from layerkit import metrics

from .keras_metric_cases import CASES, inputs

FIXTURE = np.load(pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras_metrics.npz")
CONFIGS = json.loads(str(FIXTURE["__configs__"]))
ORDER = {case: i for i, case in enumerate(sorted(CASES))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_keras(case):
    cls, kwargs, kind = CASES[case]
    m = getattr(metrics, cls)(**kwargs)
    for j, (t, p, w) in enumerate(inputs(kind, ORDER[case])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # IoU's int-cast warning, like Keras's
            m.update_state(t, p, sample_weight=w)
        np.testing.assert_allclose(m.result().numpy(), FIXTURE[f"{case}/{j}"], rtol=2e-5,
                                   atol=2e-6, err_msg=f"{case} after update {j}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_matches_keras(case):
    cls, kwargs, _ = CASES[case]
    config = getattr(metrics, cls)(**kwargs).get_config()
    expected = CONFIGS[case]
    # Keras makes default names unique per process ('precision_1'); layerkit does not.
    expected["name"] = re.sub(r"_\d+$", "", expected["name"])
    if cls == "CosineSimilarity":  # Keras drops axis from the config; layerkit keeps it
        config.pop("axis")
    assert json.loads(json.dumps(config)) == expected
