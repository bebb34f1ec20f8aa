"""Numerical gradient checking (float64 central differences along random directions).

``check_grads(f, args, order=2)`` compares the tape's gradient of ``f`` with central
differences of ``f`` along one random direction per call, so the cost does not grow
with the input size. ``order=2`` also checks the gradient of the gradient (the rules'
own differentiability), recursively.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from layerkit._core.convert import to_array
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.autodiff.tape import GradientTape
from layerkit.primitives.elementwise import multiply
from layerkit.primitives.reduce import reduce_sum


class GradientCheckError(AssertionError):
    """The analytic and numerical directional derivatives disagree."""


def _scalarize(out, weights: list | None, rng: np.random.Generator):
    """Reduce ``f``'s output(s) to a scalar with fixed random weights (lk ops).

    The scalar is ``sum(w1 * o + w2 * o**3)``: the cubic term makes the upstream gradient
    that reaches each rule depend on the inputs, so a second-order check also catches a
    rule that treats its upstream gradient as a constant.
    """
    outs = out if isinstance(out, (list, tuple)) else [out]
    if weights is None:
        weights = [(rng.standard_normal(np.shape(to_array(o))),
                    rng.standard_normal(np.shape(to_array(o))) * 0.1) for o in outs]
    total = None
    for o, (w1, w3) in zip(outs, weights):
        o = o if isinstance(o, Tensor) else wrap(to_array(o))
        cube = multiply(o, multiply(o, o))
        term = reduce_sum(multiply(o, wrap(w1.astype(o.dtype)))
                          + multiply(cube, wrap(w3.astype(o.dtype))))
        total = term if total is None else total + term
    return total, weights


def check_grads(f: Callable, args: Sequence, order: int = 2, eps: float = 1e-6,
                rtol: float = 1e-5, atol: float = 1e-6, seed: int = 0,
                argnums: Sequence[int] | None = None) -> None:
    """Assert that layerkit's gradients of ``f`` match finite differences.

    Args:
        f: function of Tensors returning a Tensor (or a list/tuple of them).
        args: the point; converted to float64 arrays.
        order: 1 checks first derivatives; 2 (default) also second; 3 third.
        eps: finite-difference step.
        rtol: tolerances on the directional derivative.
        atol: tolerances on the directional derivative.
        seed: seed for the random directions and output weights.
        argnums: which arguments to differentiate (default: all float ones).

    Raises:
        GradientCheckError: naming the order and both values when they disagree.
    """
    rng = np.random.default_rng(seed)
    xs = [np.asarray(to_array(a), dtype=np.float64) if np.asarray(to_array(a)).dtype.kind == "f"
          else to_array(a) for a in args]
    if argnums is None:
        argnums = [i for i, x in enumerate(xs) if x.dtype.kind == "f"]
    _check(f, xs, list(argnums), 1, order, eps, rtol, atol, rng)


def _check(f, xs, argnums, level, order, eps, rtol, atol, rng):
    weights = None
    dirs = {i: rng.standard_normal(xs[i].shape) for i in argnums}

    def scalar_f(*arrays):
        nonlocal weights
        s, weights = _scalarize(f(*arrays), weights, rng)
        return s

    # Fix the output weights with one plain call.
    scalar_f(*[wrap(x) for x in xs])

    def shifted(sign):
        ys = [x + sign * eps * dirs[i] if i in dirs else x for i, x in enumerate(xs)]
        return float(to_array(scalar_f(*[wrap(y) for y in ys])))

    numeric = (shifted(+1) - shifted(-1)) / (2 * eps)

    def directional(*arrays):
        """<grad f(arrays), dirs>, computed with a tape (differentiable again)."""
        ts = [a if isinstance(a, Tensor) else wrap(a) for a in arrays]
        with GradientTape() as tape:
            tape.watch([ts[i] for i in argnums])
            s = scalar_f(*ts)
        grads = tape.gradient(s, [ts[i] for i in argnums])
        total = None
        for i, g in zip(argnums, grads):
            if g is None:
                continue
            term = reduce_sum(multiply(g, wrap(dirs[i])))
            total = term if total is None else total + term
        return total if total is not None else wrap(np.float64(0.0))

    analytic = float(to_array(directional(*[wrap(x) for x in xs])))
    if not np.isclose(analytic, numeric, rtol=rtol, atol=atol):
        raise GradientCheckError(
            f"gradient check failed for derivative order {level}: tape gives {analytic!r}, "
            f"central differences give {numeric!r} (rtol={rtol}, atol={atol})"
        )
    if level < order:
        _check(directional, xs, argnums, level + 1, order, eps, rtol * 10, atol * 10, rng)
