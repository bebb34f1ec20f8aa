"""InputSpec: the rank / axis-size / dtype a layer accepts, checked by ``Layer.__call__``."""
from __future__ import annotations


class InputSpec:
    """What a layer expects of one input (Keras semantics).

    Args:
        ndim: exact rank, or None.
        min_ndim: rank bounds, or None.
        max_ndim: rank bounds, or None.
        axes: ``{axis: size}`` fixed sizes (negative axes count from the end).
        dtype: required dtype kind, ``'float'`` or ``'int'``, or None.
        allow_last_axis_squeeze: unused; accepted for Keras compatibility.
        name: optional name of the argument, for messages.
    """

    def __init__(self, ndim: int | None = None, min_ndim: int | None = None,
                 max_ndim: int | None = None, axes: dict | None = None,
                 dtype: str | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None) -> None:
        self.ndim = ndim
        self.min_ndim = min_ndim
        self.max_ndim = max_ndim
        self.axes = dict(axes or {})
        self.dtype = dtype
        self.name = name

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in (("ndim", self.ndim), ("min_ndim", self.min_ndim),
                                          ("max_ndim", self.max_ndim), ("axes", self.axes))
                 if v]
        return f"InputSpec({', '.join(parts)})"


def check(spec, inputs, where) -> None:
    """Raise ``ValueError`` if ``inputs`` (one tensor or a list) do not fit ``spec``.

    ``where()`` names the layer (``"layer 'dense_1' of model 'sequential'"``); it is only
    called to build an error message.
    """
    if type(spec) is InputSpec:
        _check_one(spec, inputs, 0, where)
        return
    specs = list(spec)
    xs = inputs if isinstance(inputs, (list, tuple)) and len(specs) > 1 else [inputs]
    if len(specs) > 1 and len(xs) != len(specs):
        raise ValueError(f"{where()} expects {len(specs)} inputs, but it received {len(xs)} "
                         f"input tensors")
    for i, (s, x) in enumerate(zip(specs, xs)):
        if s is not None and x is not None:
            _check_one(s, x, i, where)


def _check_one(s: InputSpec, x, i: int, where) -> None:
    if not hasattr(x, "shape"):
        if isinstance(x, dict):
            got = f"a dict with keys {sorted(map(str, x))[:10]}"
        elif isinstance(x, (list, tuple)):
            got = f"a {type(x).__name__} of {len(x)} items"
        else:
            got = f"a {type(x).__name__}"
        raise ValueError(f"Input {i} of {where()} is incompatible with the layer: expected a "
                         f"tensor, received {got}")
    shape = tuple(x.shape)
    rank = len(shape)
    problem = None
    if s.ndim is not None and rank != s.ndim:
        problem = f"expected ndim={s.ndim}, found ndim={rank}. Full shape received: {shape}"
    elif s.min_ndim is not None and rank < s.min_ndim:
        problem = (f"expected min_ndim={s.min_ndim}, found ndim={rank}. Full shape received: "
                   f"{shape}")
    elif s.max_ndim is not None and rank > s.max_ndim:
        problem = (f"expected max_ndim={s.max_ndim}, found ndim={rank}. Full shape received: "
                   f"{shape}")
    else:
        for axis, size in s.axes.items():
            a = axis if axis >= 0 else rank + axis
            if size is not None and 0 <= a < rank and shape[a] != size and shape[a] is not None:
                problem = (f"expected axis {axis} of the input shape to have value {size}, but "
                           f"received input with shape {shape}")
                break
        if problem is None and s.dtype is not None:
            kind = getattr(x.dtype, "kind", "f")
            if kind not in ("f" if s.dtype == "float" else "iu"):
                problem = f"expected a {s.dtype} dtype, received {x.dtype} (shape {shape})"
    if problem is not None:
        raise ValueError(f"Input {i} of {where()} is incompatible with the layer: {problem}")
