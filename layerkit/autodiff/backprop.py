"""The reverse walk: iterative, math-free, shape-checked.

Nodes are stored in recording order, which is already a topological order, so the
walk is a reversed loop with no recursion (deep unrolled RNNs are fine).
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.ops.elementwise import add, cast


def _zeros_view(t: Tensor) -> Tensor:
    return wrap(np.broadcast_to(np.zeros((), t.dtype), t.shape))


def _accumulate(grads: dict, t: Tensor, g: Tensor) -> None:
    key = id(t)
    prev = grads.get(key)
    grads[key] = g if prev is None else add(prev, g)


def backward(nodes: list, targets: list, seeds: list, sources: list) -> list:
    """Gradients of ``sum(seed * target)`` w.r.t. each source (None if unconnected).

    ``nodes`` are ``(op, inputs, outputs, attrs)`` tuples in recording order.
    """
    # Forward sweep: which nodes lie on a path from a source, and which of their
    # inputs need a gradient.
    relevant = {id(s) for s in sources}
    path = []
    for node in nodes:
        ins = node[1]
        if len(ins) == 1:
            needs = (id(ins[0]) in relevant,)
        else:
            needs = tuple([id(t) in relevant for t in ins])
        if True in needs:
            path.append((node, needs))
            for o in node[2]:
                relevant.add(id(o))

    grads: dict = {}
    for t, s in zip(targets, seeds):
        if id(t) in relevant:
            _accumulate(grads, t, s)

    for (op, ins, outs, attrs), needs in reversed(path):
        if op.num_outputs == 1:
            g = grads.get(id(outs[0]))
            if g is None:
                continue
            in_grads = op.vjp(g, ins, outs[0], needs, **attrs)
        else:
            gs = [grads.get(id(o)) for o in outs]
            if all(g is None for g in gs):
                continue
            # Outputs nobody used get zeros as a zero-stride view: no memory traffic.
            gs = tuple(_zeros_view(o) if g is None else g for o, g in zip(outs, gs))
            in_grads = op.vjp(gs, ins, outs, needs, **attrs)
        if isinstance(in_grads, Tensor):
            in_grads = (in_grads,)
        for x, gx, need in zip(ins, in_grads, needs):
            if not need or gx is None:
                continue
            # Inputs that need a gradient are watched float tensors, so ``_v`` is an
            # ndarray or NumPy scalar with .shape/.dtype.
            gv, xv = gx._v, x._v
            if gv.shape != xv.shape:
                raise ValueError(
                    f"gradient rule of op '{op.name}' returned shape {gx.shape} for an "
                    f"input of shape {x.shape}"
                )
            if gv.dtype is not xv.dtype and gv.dtype != xv.dtype:
                gx = cast(gx, xv.dtype)
            key = id(x)
            prev = grads.get(key)
            grads[key] = gx if prev is None else add(prev, gx)
    return [grads.get(id(s)) for s in sources]
