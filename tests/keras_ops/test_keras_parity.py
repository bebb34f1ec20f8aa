"""lk.keras_ops against results recorded once from Keras 3 (torch backend) on the same
inputs: values at float32 precision, shapes and dtypes
(tests/fixtures/make_keras_ops_parity.py records them)."""
import pathlib

import numpy as np
import pytest

import layerkit as lk
from layerkit import keras_ops as ops
from tests.keras_ops import parity_cases as pc

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras_ops_parity.npz"
REF = np.load(FIXTURE)
ENV = {k[len("input_"):]: REF[k] for k in REF.files if k.startswith("input_")}


def _leaves(v):
    if isinstance(v, (tuple, list)):
        return [leaf for e in v for leaf in _leaves(e)]
    return [v]


@pytest.mark.parametrize("index", range(len(pc.CASES)), ids=pc.CASES)
def test_matches_keras(index):
    case = pc.CASES[index]
    with np.errstate(all="ignore"):
        got = _leaves(eval(case, {"ops": ops, "np": np, **ENV}))  # noqa: S307
    want = [REF[f"{index}_{j}"] for j in range(len(got)) if f"{index}_{j}" in REF.files]
    assert len(want) == len(got), f"{case}: {len(got)} outputs, Keras gave {len(want)}"
    for g, w in zip(got, want):
        g = np.asarray(g.numpy() if isinstance(g, lk.Tensor) else g)
        assert g.shape == w.shape, f"{case}: shape {g.shape}, Keras {w.shape}"
        assert g.dtype == w.dtype, f"{case}: dtype {g.dtype}, Keras {w.dtype}"
        np.testing.assert_allclose(g.astype(np.complex128), w.astype(np.complex128),
                                   rtol=1e-4, atol=2e-5, equal_nan=True, err_msg=case)


def test_inputs_are_the_recorded_ones():
    # The cases module builds the same inputs the fixture was recorded with.
    for name, value in ENV.items():
        np.testing.assert_array_equal(getattr(pc, name), value)
