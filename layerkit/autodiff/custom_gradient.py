"""custom_gradient: one recorded node whose vjp is the user's grad_fn."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np

from layerkit._core import context
from layerkit._core.convert import convert_to_tensor
from layerkit._core.nest import flatten
from layerkit._core.nest import pack_sequence_as as pack_like
from layerkit._core.op import Op, wrap
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable


class _VariableWatcher:
    """A recorder that only notes which trainable Variables are read."""

    def __init__(self) -> None:
        self.variables: dict[int, Variable] = {}

    def read_variable(self, var: Variable) -> None:
        if var.trainable:
            self.variables.setdefault(id(var), var)

    def record(self, op, ins, outs, attrs) -> None:
        pass


def _holds_tensor(a) -> bool:
    return isinstance(a, (list, tuple, dict)) and any(isinstance(x, Tensor) for x in flatten(a))


def _takes_variables(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "variables" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def custom_gradient(f: Callable) -> Callable:
    """Decorator giving ``f`` a hand-written gradient.

    ``f(*args)`` returns ``(y, grad_fn)``. ``grad_fn(*upstream)`` returns one gradient per
    positional input (a single value when there is one input); an argument that is a
    list/tuple/dict of Tensors counts as its flattened tensors, in order. If ``f`` reads trainable
    Variables, ``grad_fn(*upstream, variables=None)`` must return
    ``(input_grads, variable_grads)``. A ``grad_fn`` written with lk ops is itself
    differentiable, so higher-order gradients work.

    Examples:
        >>> import layerkit as lk
        >>> @lk.custom_gradient
        ... def log1pexp(x):
        ...     e = lk.exp(x)
        ...     return lk.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))
        >>> lk.gradients_function(log1pexp)(100.0)
        [Tensor(1., shape=(), dtype=float32)]
    """
    name = getattr(f, "__name__", "custom_gradient_fn")

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        # A list/tuple/dict argument holding Tensors is a structure of inputs (as in TF),
        # not one value to stack: stacking would cut its tensors off the tape.
        structured = [_holds_tensor(a) for a in args]
        if True in structured:
            call_args = [pack_like(a, [convert_to_tensor(x) for x in flatten(a)]) if s
                         else convert_to_tensor(a) for a, s in zip(args, structured)]
            ins = tuple(flatten(call_args))
        else:
            ins = call_args = tuple(convert_to_tensor(a) for a in args)
        watcher = _VariableWatcher()
        context.push(watcher)
        try:
            result = f(*call_args, **kwargs)
        finally:
            context.pop(watcher)
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError(
                f"custom_gradient function '{name}' must return (outputs, grad_fn); "
                f"received {type(result).__name__}"
            )
        y, grad_fn = result
        multi = isinstance(y, (list, tuple))
        ys = [convert_to_tensor(v) for v in (y if multi else [y])]
        variables = tuple(v for v in watcher.variables.values() if not any(v is a for a in ins))
        if variables and not _takes_variables(grad_fn):
            raise TypeError(
                f"custom_gradient function '{name}' reads Variables "
                f"({', '.join(v.name for v in variables)}) but its grad_fn does not accept a "
                f"'variables' keyword argument"
            )
        # New output Tensors (a Variable's array is copied: it may change in place).
        outs = tuple(wrap(np.array(t._rv) if isinstance(t, Variable) else t._rv) for t in ys)
        if context.RECORDERS:
            op = Op(f"custom_gradient:{name}", None,
                    _make_vjp(name, grad_fn, len(ins), variables), num_outputs=len(outs))
            node_ins = ins + variables
            for r in tuple(context.RECORDERS):
                r.record(op, node_ins, outs, {})
        if multi:
            return type(y)(outs) if isinstance(y, tuple) else list(outs)
        return outs[0]

    return wrapper


def _check(name: str, what: str, grads: list, expected: tuple) -> list:
    if len(grads) != len(expected):
        raise ValueError(
            f"custom_gradient function '{name}': grad_fn returned {len(grads)} {what} "
            f"gradient(s), expected {len(expected)} (one per {what})"
        )
    out: list = []
    for i, (g, x) in enumerate(zip(grads, expected)):
        if g is None:
            out.append(None)
            continue
        g = convert_to_tensor(g)
        if g.shape != x.shape:
            raise ValueError(
                f"custom_gradient function '{name}': gradient {i} for {what} has shape "
                f"{g.shape}, expected {x.shape}"
            )
        out.append(g)
    return out


def _make_vjp(name: str, grad_fn: Callable, n_inputs: int, variables: tuple):
    def vjp(g, ins, out, needs):
        upstream = g if isinstance(g, tuple) else (g,)
        if variables:
            res = grad_fn(*upstream, variables=list(variables))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise ValueError(
                    f"custom_gradient function '{name}': with variables, grad_fn must "
                    f"return (input_grads, variable_grads)"
                )
            in_grads, var_grads = res
        else:
            in_grads, var_grads = grad_fn(*upstream), []
        if isinstance(in_grads, Tensor) or not isinstance(in_grads, (list, tuple)):
            in_grads = [in_grads]
        grads = _check(name, "input", list(in_grads), ins[:n_inputs])
        grads += _check(name, "variable", list(var_grads), ins[n_inputs:])
        return tuple(grads)

    return vjp
