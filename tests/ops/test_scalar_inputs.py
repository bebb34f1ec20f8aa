"""Every unary lk.nn / lk.math function on a 0-d tensor: a NumPy-scalar slip in a kernel
(``out=`` on a scalar) once broke lk.nn.leaky_relu on scalars, forward and backward."""
import numpy as np
import pytest

import layerkit as lk
from layerkit.autodiff.check import check_grads

# functions that rightly refuse a scalar (they need an axis) or take other arguments
REFUSE = {"compute_average_loss", "crelu", "log_softmax", "softmax", "top_k",
          "sigmoid_cross_entropy_with_logits"}


def _unary(namespace):
    for name in sorted(dir(namespace)):
        f = getattr(namespace, name)
        if name.startswith("_") or not callable(f) or isinstance(f, type) or name in REFUSE:
            continue
        yield f"{namespace.__name__.split('.')[-1]}.{name}", f


CASES = list(_unary(lk.nn)) + list(_unary(lk.math))


@pytest.mark.parametrize("name, f", CASES, ids=[c[0] for c in CASES])
def test_scalar_forward_matches_a_one_element_vector_and_gradients_check(name, f):
    for v in (-0.7, 0.6):
        try:
            vec = f(lk.constant([v], lk.float64))
        except (TypeError, ValueError):
            return  # not a unary function of one tensor (needs more arguments)
        try:
            with np.errstate(all="ignore"):
                y = f(lk.constant(v, lk.float64))
        except ValueError as e:  # an op along an axis may refuse a scalar, clearly
            assert any(w in str(e) for w in ("rank", "axis", "scalar")), (name, str(e))
            return
        vec, y = np.asarray(vec), np.asarray(y)
        if vec.shape != (1,):
            return  # a reduction or a shape-changing function
        assert y.shape == (), f"{name} of a scalar has shape {y.shape}"
        np.testing.assert_allclose(y, vec[0], rtol=1e-12, equal_nan=True)
        if y.dtype.kind == "f" and np.isfinite(y):
            check_grads(lambda x: f(x), [np.float64(v)])
