"""Input signatures: TensorSpec, the cache key of a call, and retrace reasons.

The key of a call (STYLE.md principle 12) holds, for every tensor argument (Tensor,
NumPy array or NumPy scalar), its shape and dtype; for Variables their identity (the
graph reads them live); for Python numbers, strings and None their type and value;
for other objects their identity; lists, tuples, namedtuples and dicts by structure.
"""
from __future__ import annotations

import numpy as np

from layerkit._core.convert import to_array
from layerkit._core.op import wrap
from layerkit._core.spec import TensorSpec
from layerkit._core.spec import shapes_compatible as shape_compatible
from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable

_VALUE_TYPES = (bool, int, float, complex, str, bytes, type(None))


class CallKey:
    """The cache key of one call, the flat tensor arguments, and how to describe them."""

    __slots__ = ("key", "arrays", "leaves", "paths", "descs", "refs", "variables")

    def __init__(self) -> None:
        self.key = None
        self.arrays: list = []     # flat tensor-argument arrays, in order
        self.leaves: list = []     # the argument objects they came from
        self.paths: list = []      # their argument paths (for names and reasons)
        self.descs: list = []      # (path, description) of every leaf
        self.refs: list = []       # objects keyed by identity (kept alive)
        self.variables: list = []  # Variable arguments, in order (keyed by shape and dtype)


def _tensor_array(x):
    if isinstance(x, Tensor):
        return x._v if isinstance(x._v, np.ndarray) else np.asarray(x._v)
    return x if isinstance(x, np.ndarray) else np.asarray(x)


def build_key(args: tuple, kwargs: dict, names: list, describe: bool = False,
              shape_key=None) -> CallKey:
    """Walk the arguments once: cache key, flat tensor arrays, and (optionally) paths.

    ``shape_key(shape)``, if given, stands for each tensor's shape in the key (``len``:
    the key of the call's structure, dtypes and Python values, for any sizes)."""
    ck = CallKey()
    arrays, paths, descs = ck.arrays, ck.paths, ck.descs
    if not kwargs and not describe and shape_key is None:
        # Fast path (the common call): every argument a Tensor holding an ndarray.
        parts = []
        for x in args:
            if type(x) is not Tensor or type(x._v) is not np.ndarray:
                break
            a = x._v
            arrays.append(a)
            parts.append((a.shape, a.dtype))
        else:
            ck.key = tuple(parts)
            ck.leaves = args
            return ck
        arrays.clear()
    leaves = ck.leaves

    def walk(x, path):
        t = type(x)
        if t is Tensor or t is np.ndarray or (isinstance(x, (Tensor, np.ndarray))
                                              and not isinstance(x, Variable)):
            a = _tensor_array(x)
            arrays.append(a)
            leaves.append(x)
            if describe:
                paths.append(path)
                descs.append((path, f"tensor shape {a.shape} dtype {a.dtype.name}"))
            return (a.shape if shape_key is None else shape_key(a.shape), a.dtype)
        if t in _VALUE_TYPES:
            if describe:
                descs.append((path, f"Python {t.__name__} {x!r}"))
            return (t, x)
        if isinstance(x, Variable):
            # By shape and dtype, as in TensorFlow 2: another Variable of the same kind
            # does not retrace (the graph is re-bound to it, see ConcreteFunction).
            ck.variables.append(x)
            a = x._rv
            if describe:
                descs.append((path, f"Variable shape {np.shape(a)} dtype {a.dtype.name}"))
            return ("V", np.shape(a), a.dtype)
        if isinstance(x, np.generic):
            a = np.asarray(x)
            arrays.append(a)
            leaves.append(x)
            if describe:
                paths.append(path)
                descs.append((path, f"tensor shape () dtype {a.dtype.name}"))
            return (() if shape_key is None else shape_key(()), a.dtype)
        if isinstance(x, (list, tuple)):
            return (t, tuple(walk(v, f"{path}[{i}]") for i, v in enumerate(x)))
        if isinstance(x, dict):
            ks = sorted(x, key=repr)
            return (t, tuple((k, walk(x[k], f"{path}[{k!r}]")) for k in ks))
        if isinstance(x, TensorSpec):
            raise TypeError("TensorSpec arguments are only accepted by get_concrete_function")
        ck.refs.append(x)
        if describe:
            descs.append((path, f"{t.__name__} object (id {id(x)})"))
        return ("O", id(x))

    parts = [walk(a, names[i] if i < len(names) else f"args[{i}]") for i, a in enumerate(args)]
    if kwargs:
        parts.append(tuple((k, walk(kwargs[k], k)) for k in sorted(kwargs)))
    ck.key = tuple(parts)
    return ck


def rebuild(args: tuple, kwargs: dict, leaves: list):
    """``args``/``kwargs`` with their tensor leaves replaced by ``leaves`` (same walk order)."""
    it = iter(leaves)

    def walk(x):
        t = type(x)
        if t is Tensor or t is np.ndarray or (isinstance(x, (Tensor, np.ndarray))
                                              and not isinstance(x, Variable)):
            return next(it)
        if t in _VALUE_TYPES or isinstance(x, Variable):
            return x
        if isinstance(x, np.generic):
            return next(it)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return t(*[walk(v) for v in x])
        if isinstance(x, (list, tuple)):
            return t(walk(v) for v in x)
        if isinstance(x, dict):
            ks = sorted(x, key=repr)
            vals = {k: walk(x[k]) for k in ks}
            return {k: vals[k] for k in x} if t is dict else t((k, vals[k]) for k in x)
        return x

    new_args = tuple(walk(a) for a in args)
    new_kwargs = {}
    if kwargs:
        vals = {k: walk(kwargs[k]) for k in sorted(kwargs)}
        new_kwargs = {k: vals[k] for k in kwargs}
    return new_args, new_kwargs


def fits(shape: tuple, general: tuple) -> bool:
    """True if a concrete ``shape`` is one of the shapes ``general`` (None = any) stands for."""
    return len(shape) == len(general) and all(g is None or g == d
                                               for d, g in zip(shape, general))


def generalize(shape: tuple, mask) -> tuple:
    """``shape`` with the dimensions flagged in ``mask`` replaced by None."""
    return tuple(None if m else d for d, m in zip(shape, mask)) if mask else tuple(shape)


class SignatureMismatchError(TypeError, ValueError):
    """Arguments that do not fit a traced signature (a TypeError, as in TensorFlow 2.13+,
    and a ValueError, as in earlier versions: code catching either works)."""


def retrace_reason(old: list, new: list) -> str:
    """Which argument changed between two calls' descriptions."""
    old_d, new_d = dict(old), dict(new)
    for path, desc in new:
        if path not in old_d:
            return f"argument {path} is new ({desc})"
        if old_d[path] != desc:
            return f"argument {path} changed from {old_d[path]} to {desc}"
    for path, desc in old:
        if path not in new_d:
            return f"argument {path} ({desc}) is no longer passed"
    return "the argument structure changed"


# ---- input_signature handling ---------------------------------------------------------------
def flatten_specs(sig) -> list:
    if isinstance(sig, TensorSpec):
        return [sig]
    if isinstance(sig, (list, tuple)):
        out = []
        for s in sig:
            out.extend(flatten_specs(s))
        return out
    if isinstance(sig, dict):
        out = []
        for k in sorted(sig, key=repr):
            out.extend(flatten_specs(sig[k]))
        return out
    raise TypeError(f"input_signature must contain TensorSpecs (in lists, tuples or dicts), "
                    f"received {type(sig).__name__}")


def conform(fname: str, sig: tuple, args: tuple, names: list, copy: bool = False) -> tuple:
    """Convert ``args`` to the signature: arrays of the spec dtypes, shapes checked
    (``copy``: never keep the caller's own NumPy arrays).

    Raises:
        TypeError: wrong structure or a tensor of another dtype.
        ValueError: a shape that does not fit its TensorSpec.
    """
    if len(args) != len(sig):
        raise TypeError(f"lk.function '{fname}': the input_signature has {len(sig)} "
                        f"argument(s), received {len(args)}")

    def walk(spec, x, path):
        if isinstance(spec, TensorSpec):
            if isinstance(x, Variable):
                raise TypeError(f"lk.function '{fname}': argument {path} is a Variable; with an "
                                f"input_signature pass its value, or capture the Variable")
            if isinstance(x, (Tensor, np.ndarray, np.generic)):
                a = _tensor_array(x)
                # Tapes know a Tensor by identity: keep it (also when it holds a NumPy
                # scalar, as 0-d results of ops do: ``f(v * v)``).
                keep = type(x) is Tensor
                if a.dtype != spec.dtype:
                    raise TypeError(
                        f"lk.function '{fname}': argument {path} has dtype {a.dtype.name}, "
                        f"the input_signature expects {spec}")
            else:
                keep = False
                try:
                    a = to_array(x, spec.dtype)
                except (TypeError, ValueError) as e:
                    raise TypeError(f"lk.function '{fname}': argument {path} cannot be "
                                    f"converted to {spec}: {e}") from None
            if not shape_compatible(spec.shape, a.shape):
                raise SignatureMismatchError(
                    f"lk.function '{fname}': argument {path} has shape {a.shape}, which does "
                    f"not fit the input_signature {spec}")
            if keep:
                return x
            # A caller's NumPy array is copied only if asked (a call under a tape keeps
            # it); graph results never share it.
            return wrap(np.array(a) if copy and a is x else a)
        if isinstance(spec, (list, tuple)):
            if not isinstance(x, (list, tuple)) or len(x) != len(spec):
                raise TypeError(f"lk.function '{fname}': argument {path} should be a sequence of "
                                f"{len(spec)} item(s) to match the input_signature, received "
                                f"{type(x).__name__}")
            return type(x)(walk(s, v, f"{path}[{i}]") for i, (s, v) in enumerate(zip(spec, x)))
        if isinstance(spec, dict):
            if not isinstance(x, dict) or set(x) != set(spec):
                raise TypeError(f"lk.function '{fname}': argument {path} should be a dict with "
                                f"keys {sorted(spec, key=repr)}")
            return {k: walk(spec[k], x[k], f"{path}[{k!r}]") for k in x}
        raise TypeError(f"input_signature entries must be TensorSpecs, received {spec!r}")

    return tuple(walk(s, a, names[i] if i < len(names) else f"args[{i}]")
                 for i, (s, a) in enumerate(zip(sig, args)))


def signature_masks(sig: tuple, arrays: list) -> list:
    """Per flat argument array: which dimensions its TensorSpec leaves unknown (a spec
    without a shape leaves every dimension unknown, for the rank received)."""
    out = []
    for spec, a in zip(flatten_specs(sig), arrays):
        nd = np.ndim(a)
        out.append((True,) * nd if spec.shape is None else tuple(d is None for d in spec.shape))
    return out
