"""The reverse walk: iterative, math-free, shape-checked.

Nodes are stored in recording order, which is already a topological order, so the
walk is a reversed loop with no recursion (deep unrolled RNNs are fine). This loop runs
once per recorded op of every training step: keep it lean.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit.primitives.elementwise import add, cast


def _zeros_view(t: Tensor) -> Tensor:
    return wrap(np.broadcast_to(np.zeros((), t.dtype), t.shape))


def _sweep(nodes: list, sources: list) -> list:
    """The nodes on a path from a source, each with the needs relative to the sources."""
    relevant = {id(s) for s in sources}
    path = []
    for node in nodes:
        ins = node[1]
        if len(ins) == 1:
            needs = (id(ins[0]) in relevant,)
        else:
            needs = tuple([id(t) in relevant for t in ins])
        if True in needs:
            path.append((node[0], ins, node[2], node[3], needs))
            for o in node[2]:
                if o._rv.dtype.kind in "fc":  # integer/bool results carry no gradient
                    relevant.add(id(o))
    return path


def _checked(op, x: Tensor, gx: Tensor) -> Tensor:
    """``gx`` if it fits ``x``; cast to ``x``'s dtype; a ValueError naming the op if the
    rule returned the wrong shape."""
    if gx._rv.shape != x._rv.shape:
        raise ValueError(
            f"gradient rule of op '{op.name}' returned shape {gx.shape} for an "
            f"input of shape {x.shape}"
        )
    return gx if gx._rv.dtype == x._rv.dtype else cast(gx, x._rv.dtype)


def backward(nodes: list, targets: list, seeds: list, sources: list,
             swept: bool = False) -> list:
    """Gradients of ``sum(seed * target)`` w.r.t. each source (None if unconnected).

    ``nodes`` are ``(op, inputs, outputs, attrs, needs)`` tuples in recording order.
    With ``swept`` the caller vouches that each node's ``needs`` (inputs watched when it
    was recorded) already are the inputs on a path from a source; otherwise a forward
    sweep recomputes them from ``sources``.
    """
    path = nodes if swept else _sweep(nodes, sources)
    if len(targets) == 1:
        grads = {id(targets[0]): seeds[0]}
        get = grads.get
    else:
        grads = {}
        get = grads.get
        for t, s in zip(targets, seeds):
            key = id(t)
            prev = get(key)
            grads[key] = s if prev is None else add(prev, s)

    for op, ins, outs, attrs, needs in reversed(path):
        if op.num_outputs == 1:
            out = outs[0]
            g = get(id(out))
            if g is None:
                continue
        else:
            gs = [get(id(o)) for o in outs]
            if all(g is None for g in gs):
                continue
            if getattr(op.vjp, "takes_none", False):  # it tells unused outputs apart
                g = tuple(gs)
            else:
                # Outputs nobody used get zeros as a zero-stride view: no memory traffic.
                g = tuple(_zeros_view(o) if g is None else g for o, g in zip(outs, gs))
            out = outs
        in_grads = op.vjp(g, ins, out, needs, **attrs) if attrs else op.vjp(g, ins, out, needs)
        if type(in_grads) is not tuple:
            in_grads = (in_grads,) if isinstance(in_grads, Tensor) else tuple(in_grads)
        # Inputs that need a gradient are watched float tensors, so ``_v`` is an ndarray
        # or NumPy scalar with .shape/.dtype.
        if len(ins) == 1:
            gx = in_grads[0]
            if gx is None:
                continue
            x = ins[0]
            gv, xv = gx._rv, x._rv
            if gv.dtype is not xv.dtype or gv.shape != xv.shape:
                gx = _checked(op, x, gx)
            key = id(x)
            prev = get(key)
            grads[key] = gx if prev is None else add(prev, gx)
            continue
        for x, gx, need in zip(ins, in_grads, needs):
            if gx is None or not need:
                continue
            gv, xv = gx._rv, x._rv
            if gv.dtype is not xv.dtype or gv.shape != xv.shape:
                gx = _checked(op, x, gx)
            key = id(x)
            prev = get(key)
            grads[key] = gx if prev is None else add(prev, gx)
    if len(sources) == 1:
        return [get(id(sources[0]))]
    return [get(id(s)) for s in sources]
