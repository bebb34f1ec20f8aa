"""Every public function, and every public method of a public class, has type hints.

"Public" is what a user reaches without an underscore: each non-module name at the top
level of ``layerkit``, and each name in the ``__all__`` of its public namespaces
(``lk.layers``, ``lk.losses``, ``lk.data``, ``lk.ops`` and its submodules, ... found by
walking the modules ``lk`` exposes, plus the modules listed in their ``__all__``).
For a public class, its methods, classmethods, staticmethods, property getters,
``__init__`` and ``__call__``, including those inherited from layerkit base classes, are
checked. Every parameter except the leading ``self``/``cls`` needs an annotation
(``*args``/``**kwargs`` included, ``Any`` is fine there), and so does the return.

Only presence is checked here; whether the hints are true is mypy's job
(tests/test_typecheck.py). :data:`PENDING` (empty now) named the callables in packages
other work was reshaping; it may only shrink.
"""
from __future__ import annotations

import inspect
import types

import layerkit as lk

# Implementation packages reached as ``lk.<name>`` that are not namespaces of their own
# (their public names are re-exported elsewhere and checked there).
_NOT_NAMESPACES = {"layerkit.kernels", "layerkit._core"}
# Modules registered as ``layerkit.ops.<sub>`` (Keras's ``keras.ops.<sub>``).
_OPS_SUBMODULES = ("core", "einops", "image", "linalg", "math", "nn", "numpy")
_DUNDERS = {"__init__", "__call__"}

# Packages whose unhinted callables may still sit in PENDING (other work in progress).
PENDING_PACKAGES = ("layerkit.models", "layerkit.autodiff", "layerkit.optimizers",
                    "layerkit.kernels", "layerkit.distribute", "layerkit.primitives",
                    "layerkit._core.op")

# pending: empty now (issue #16's last item hinted the primitives, models, distribute,
# optimizers and autodiff entries). Names are ``module.qualname`` of the function or
# ``module.Class.method``; test_pending_entries_still_lack_hints rejects hinted ones.
PENDING: frozenset[str] = frozenset()


def namespaces() -> list[tuple[str, types.ModuleType]]:
    """(public path, module) for ``lk`` and every public namespace under it."""
    stack = [(f"lk.{n}", getattr(lk, n)) for n in sorted(dir(lk))
             if not n.startswith("_") and isinstance(getattr(lk, n), types.ModuleType)]
    stack += [(f"lk.ops.{s}", getattr(lk.ops, s)) for s in _OPS_SUBMODULES]
    out: list[tuple[str, types.ModuleType]] = [("lk", lk)]
    seen = {id(lk)}
    while stack:
        path, module = stack.pop(0)
        if (id(module) in seen or not module.__name__.startswith("layerkit")
                or module.__name__ in _NOT_NAMESPACES):
            continue
        seen.add(id(module))
        out.append((path, module))
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name, None)
            if isinstance(value, types.ModuleType):
                stack.append((f"{path}.{name}", value))
    return out


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return [n for n in names if not isinstance(getattr(module, n, None), types.ModuleType)]


def _ours(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("layerkit")


def _methods(cls: type):
    """(key, function, is_method) for each public method of ``cls`` and its layerkit bases."""
    for klass in cls.__mro__:
        if not _ours(klass):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") and name not in _DUNDERS:
                continue
            if isinstance(attr, staticmethod):
                fn, method = attr.__func__, False
            elif isinstance(attr, classmethod):
                fn, method = attr.__func__, True
            elif isinstance(attr, property):
                fn, method = attr.fget, True
            elif inspect.isfunction(attr):
                fn, method = attr, True
            else:
                continue
            if fn is not None and inspect.isfunction(fn):
                yield f"{klass.__module__}.{klass.__qualname__}.{name}", fn, method


def public_callables() -> dict[str, tuple[types.FunctionType, bool, str]]:
    """key -> (function, is_method, a public path that reaches it)."""
    found: dict[str, tuple[types.FunctionType, bool, str]] = {}
    seen: set[int] = set()
    for path, module in namespaces():
        for name in _public_names(module):
            obj = getattr(module, name, None)
            if id(obj) in seen or not _ours(obj):
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                for key, fn, method in _methods(obj):
                    found.setdefault(key, (fn, method, f"{path}.{name}"))
            elif inspect.isfunction(obj):
                found.setdefault(f"{obj.__module__}.{obj.__qualname__}",
                                 (obj, False, f"{path}.{name}"))
    return found


def missing_hints(fn: types.FunctionType, method: bool) -> list[str]:
    """The parameters (and ``"return"``) of ``fn`` without an annotation."""
    sig = inspect.signature(fn)
    missing = [p.name for i, p in enumerate(sig.parameters.values())
               if p.annotation is inspect.Parameter.empty
               and not (i == 0 and method and p.name in ("self", "cls"))]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def test_walk_finds_the_public_api():
    paths = {p for p, _ in namespaces()}
    assert {"lk", "lk.layers", "lk.losses", "lk.metrics", "lk.optimizers", "lk.callbacks",
            "lk.data", "lk.data.experimental", "lk.math", "lk.nn", "lk.linalg", "lk.random",
            "lk.io", "lk.onnx", "lk.saving", "lk.utils", "lk.models", "lk.initializers",
            "lk.regularizers", "lk.constraints", "lk.distribute", "lk.summary", "lk.config",
            "lk.keras_ops", "lk.ops.numpy", "lk.ops.nn", "lk.errors", "lk.dtypes"} <= paths
    found = public_callables()
    assert len(found) > 1500, len(found)
    for key in ("layerkit.layers.core.Dense.__init__", "layerkit.layers.layer.Layer.__call__",
                "layerkit.data.dataset.Dataset.map", "layerkit.keras_ops.numpy.add"):
        assert key in found, key


def test_missing_hints_sees_each_gap():
    def bare(x, *args, y=1, **kwargs):
        return x

    def full(x: int, *args: object, y: int = 1, **kwargs: object) -> int:
        return x

    assert missing_hints(bare, False) == ["x", "args", "y", "kwargs", "return"]
    assert missing_hints(full, False) == []
    assert missing_hints(lk.layers.Dense.__init__, True) == []  # self is exempt


def test_public_callables_have_hints():
    bad = []
    for key, (fn, method, path) in sorted(public_callables().items()):
        if key in PENDING:
            continue
        missing = missing_hints(fn, method)
        if missing:
            bad.append(f"{key} (as {path}): {', '.join(missing)}")
    assert not bad, f"{len(bad)} public callables lack hints:\n" + "\n".join(bad)


def test_pending_is_only_for_work_in_progress():
    outside = sorted(k for k in PENDING if not k.startswith(PENDING_PACKAGES))
    assert not outside, outside


def test_pending_entries_still_lack_hints():
    found = public_callables()
    stale = sorted(k for k in PENDING if k not in found or not missing_hints(*found[k][:2]))
    assert not stale, f"hinted or gone now, delete from PENDING: {stale}"


# ---- the op registry, spelled out for type checkers ----------------------------------
# ``lk.<op>``, ``lk.math.<op>``, ``lk.linalg.<op>`` and ``lk.nn.<op>`` are filled in from
# the registry at import time, which a type checker cannot follow (it saw every one as
# Any). Each facade therefore carries a generated ``if TYPE_CHECKING:`` block importing
# the same functions; this test keeps it equal to the registry.
_BEGIN = "# ---- BEGIN op registry exports for type checkers (generated) ----"
_END = "# ---- END op registry exports ----"
FACADES = [("lk", "layerkit/__init__.py"), ("lk", "layerkit/primitives/__init__.py"),
           ("math", "layerkit/math.py"), ("linalg", "layerkit/linalg.py"), ("nn", "layerkit/nn.py")]


def _import_order(item: tuple) -> tuple[str, str, str]:
    name, fn = item
    return fn.__module__, fn.__name__, name


def registry_block(ns: str, source: str, guard: str = "TYPE_CHECKING") -> str:
    """The block for namespace ``ns`` of the facade whose text is ``source``: one
    ``from module import name as name`` per registry name the module does not already
    import itself (outside the block)."""
    import ast

    from layerkit.primitives.registry import NAMESPACES

    outside = source.split(_BEGIN)[0] + source.split(_END)[-1] if _BEGIN in source else source
    imported = {a.asname or a.name for node in ast.parse(outside).body
                if isinstance(node, ast.ImportFrom) for a in node.names}
    lines = []
    for name, fn in sorted(NAMESPACES[ns].items(), key=_import_order):
        if name in imported:
            continue
        what = f"{fn.__name__} as {name}" + ("" if fn.__name__ == name else "  # noqa: F401")
        line = f"    from {fn.__module__} import {what}\n"
        if len(line) > 100:
            line = f"    from {fn.__module__} import (\n        {what},\n    )\n"
        lines.append(line)
    return (f"{_BEGIN}\nif {guard}:  # tests/test_public_hints.py writes this block\n"
            + "".join(lines) + _END)


def test_type_checkers_see_registry_exports():
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    for ns, rel in FACADES:
        source = (root / rel).read_text(encoding="utf-8")
        guard = "_typing.TYPE_CHECKING" if rel == "layerkit/__init__.py" else "TYPE_CHECKING"
        want = registry_block(ns, source, guard)
        assert _BEGIN in source and _END in source, f"{rel}: add this block:\n{want}"
        have = _BEGIN + source.split(_BEGIN)[1].split(_END)[0] + _END
        assert have == want, f"{rel}: the block is stale; it should read:\n{want}"
