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
(tests/test_typecheck.py). :data:`PENDING` names the callables in packages other work is
reshaping at the moment; it may only shrink.
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

# pending: other work in progress (the trainer split, tape/lk.function/autograph, the
# optimizers, kernels moving out of layerkit/primitives, distribute). Names are
# ``module.qualname`` of the function or ``module.Class.method``; delete an entry once
# its hints exist (test_pending_entries_still_lack_hints says when).
PENDING: frozenset[str] = frozenset({
    "layerkit.autodiff.function.api.function",
    "layerkit.autodiff.function.pyfunc.numpy_function",
    "layerkit.autodiff.function.pyfunc.print",
    "layerkit.autodiff.function.pyfunc.py_function",
    "layerkit.autodiff.tape.GradientTape.batch_jacobian",
    "layerkit.autodiff.tape.GradientTape.gradient",
    "layerkit.autodiff.tape.GradientTape.jacobian",
    "layerkit.autodiff.tape.GradientTape.record",
    "layerkit.autodiff.tape.GradientTape.stop_recording",
    "layerkit.autodiff.tape.GradientTape.watch",
    "layerkit.distribute.input.DistributedDataset.__init__",
    "layerkit.distribute.input.DistributedDataset.element_spec",
    "layerkit.distribute.input.DistributedIterator.__init__",
    "layerkit.distribute.input.DistributedIterator.element_spec",
    "layerkit.distribute.input.DistributedIterator.get_next",
    "layerkit.distribute.losses.compute_average_loss",
    "layerkit.distribute.losses.scale_regularization_loss",
    "layerkit.distribute.strategy.CommunicationOptions.__init__",
    "layerkit.distribute.strategy.MultiWorkerMirroredStrategy.__init__",
    "layerkit.distribute.strategy.MultiWorkerMirroredStrategy.distribute_datasets_from_function",
    "layerkit.distribute.strategy.MultiWorkerMirroredStrategy.experimental_distribute_dataset",
    "layerkit.distribute.strategy.MultiWorkerMirroredStrategy.scope",
    "layerkit.distribute.strategy.ReduceOp.of",
    "layerkit.distribute.strategy.ReplicaContext.all_reduce",
    "layerkit.distribute.strategy.Strategy.cluster_resolver",
    "layerkit.distribute.strategy.Strategy.distribute_datasets_from_function",
    "layerkit.distribute.strategy.Strategy.experimental_distribute_dataset",
    "layerkit.distribute.strategy.Strategy.experimental_local_results",
    "layerkit.distribute.strategy.Strategy.gather",
    "layerkit.distribute.strategy.Strategy.reduce",
    "layerkit.distribute.strategy.Strategy.run",
    "layerkit.distribute.strategy.Strategy.scope",
    "layerkit.distribute.strategy.allreduce",
    "layerkit.distribute.strategy.broadcast_variables",
    "layerkit.models.cloning.clone_model",
    "layerkit.models.functional.Input",
    "layerkit.models.model.Model.__init__",
    "layerkit.models.model.Model.build",
    "layerkit.models.model.Model.call",
    "layerkit.models.trainer.Trainer.compile",
    "layerkit.models.trainer.Trainer.compiled_loss",
    "layerkit.models.trainer.Trainer.compute_loss",
    "layerkit.models.trainer.Trainer.compute_metrics",
    "layerkit.models.trainer.Trainer.evaluate",
    "layerkit.models.model.Model.export",
    "layerkit.models.trainer.Trainer.fit",
    "layerkit.models.model.Model.from_config",
    "layerkit.models.model.Model.input",
    "layerkit.models.model.Model.input_shape",
    "layerkit.models.model.Model.load_weights",
    "layerkit.models.trainer.Trainer.make_predict_function",
    "layerkit.models.trainer.Trainer.make_test_function",
    "layerkit.models.trainer.Trainer.make_train_function",
    "layerkit.models.model.Model.output",
    "layerkit.models.model.Model.output_shape",
    "layerkit.models.trainer.Trainer.predict",
    "layerkit.models.trainer.Trainer.predict_on_batch",
    "layerkit.models.trainer.Trainer.predict_step",
    "layerkit.models.model.Model.save",
    "layerkit.models.model.Model.save_weights",
    "layerkit.models.model.Model.summary",
    "layerkit.models.trainer.Trainer.test_on_batch",
    "layerkit.models.trainer.Trainer.test_step",
    "layerkit.models.model.Model.to_json",
    "layerkit.models.trainer.Trainer.train_on_batch",
    "layerkit.models.trainer.Trainer.train_step",
    "layerkit.models.sequential.Sequential.__init__",
    "layerkit.models.sequential.Sequential.add",
    "layerkit.models.sequential.Sequential.build",
    "layerkit.models.sequential.Sequential.call",
    "layerkit.optimizers.adagrad.Adagrad.__init__",
    "layerkit.optimizers.adam.Adam.__init__",
    "layerkit.optimizers.adam.AdamW.__init__",
    "layerkit.optimizers.get",
    "layerkit.optimizers.optimizer.Optimizer.__init__",
    "layerkit.optimizers.optimizer.Optimizer.apply",
    "layerkit.optimizers.optimizer.Optimizer.apply_gradients",
    "layerkit.optimizers.optimizer.Optimizer.build",
    "layerkit.optimizers.optimizer.Optimizer.exclude_from_weight_decay",
    "layerkit.optimizers.optimizer.Optimizer.learning_rate",
    "layerkit.optimizers.optimizer.Optimizer.minimize",
    "layerkit.optimizers.rmsprop.RMSprop.__init__",
    "layerkit.optimizers.sgd.SGD.__init__",
    "layerkit.primitives.array.broadcast_to",
    "layerkit.primitives.array.concat",
    "layerkit.primitives.array.expand_dims",
    "layerkit.primitives.array.gather",
    "layerkit.primitives.array.gather_nd",
    "layerkit.primitives.array.pad",
    "layerkit.primitives.array.reshape",
    "layerkit.primitives.array.reverse",
    "layerkit.primitives.array.slice",
    "layerkit.primitives.array.split",
    "layerkit.primitives.array.squeeze",
    "layerkit.primitives.array.stack",
    "layerkit.primitives.array.tile",
    "layerkit.primitives.array.transpose",
    "layerkit.primitives.array.unstack",
    "layerkit.primitives.conv.avg_pool2d",
    "layerkit.primitives.conv.conv2d",
    "layerkit.primitives.conv.conv2d_transpose",
    "layerkit.primitives.conv.depthwise_conv2d",
    "layerkit.primitives.conv.max_pool2d",
    "layerkit.primitives.conv_nd.avg_pool",
    "layerkit.primitives.conv_nd.avg_pool1d",
    "layerkit.primitives.conv_nd.avg_pool3d",
    "layerkit.primitives.conv_nd.conv1d",
    "layerkit.primitives.conv_nd.conv1d_transpose",
    "layerkit.primitives.conv_nd.conv3d",
    "layerkit.primitives.conv_nd.conv3d_transpose",
    "layerkit.primitives.conv_nd.conv_transpose",
    "layerkit.primitives.conv_nd.convolution",
    "layerkit.primitives.conv_nd.max_pool",
    "layerkit.primitives.conv_nd.max_pool1d",
    "layerkit.primitives.conv_nd.max_pool3d",
    "layerkit.primitives.conv_nd.pool",
    "layerkit.primitives.conv_nd.separable_conv2d",
    "layerkit.primitives.creation.eye",
    "layerkit.primitives.creation.fill",
    "layerkit.primitives.creation.linspace",
    "layerkit.primitives.creation.one_hot",
    "layerkit.primitives.creation.ones",
    "layerkit.primitives.creation.ones_like",
    "layerkit.primitives.creation.range",
    "layerkit.primitives.creation.zeros",
    "layerkit.primitives.creation.zeros_like",
    "layerkit.primitives.elementwise.abs",
    "layerkit.primitives.elementwise.add",
    "layerkit.primitives.elementwise.cast",
    "layerkit.primitives.elementwise.ceil",
    "layerkit.primitives.elementwise.clip_by_value",
    "layerkit.primitives.elementwise.cos",
    "layerkit.primitives.elementwise.divide",
    "layerkit.primitives.elementwise.equal",
    "layerkit.primitives.elementwise.erf",
    "layerkit.primitives.elementwise.exp",
    "layerkit.primitives.elementwise.expm1",
    "layerkit.primitives.elementwise.floor",
    "layerkit.primitives.elementwise.floordiv",
    "layerkit.primitives.elementwise.greater",
    "layerkit.primitives.elementwise.greater_equal",
    "layerkit.primitives.elementwise.isfinite",
    "layerkit.primitives.elementwise.isnan",
    "layerkit.primitives.elementwise.less",
    "layerkit.primitives.elementwise.less_equal",
    "layerkit.primitives.elementwise.log",
    "layerkit.primitives.elementwise.log1p",
    "layerkit.primitives.elementwise.logical_and",
    "layerkit.primitives.elementwise.logical_not",
    "layerkit.primitives.elementwise.logical_or",
    "layerkit.primitives.elementwise.maximum",
    "layerkit.primitives.elementwise.minimum",
    "layerkit.primitives.elementwise.mod",
    "layerkit.primitives.elementwise.multiply",
    "layerkit.primitives.elementwise.negative",
    "layerkit.primitives.elementwise.not_equal",
    "layerkit.primitives.elementwise.pow",
    "layerkit.primitives.elementwise.round",
    "layerkit.primitives.elementwise.rsqrt",
    "layerkit.primitives.elementwise.sigmoid",
    "layerkit.primitives.elementwise.sign",
    "layerkit.primitives.elementwise.sin",
    "layerkit.primitives.elementwise.sqrt",
    "layerkit.primitives.elementwise.square",
    "layerkit.primitives.elementwise.stop_gradient",
    "layerkit.primitives.elementwise.subtract",
    "layerkit.primitives.elementwise.tan",
    "layerkit.primitives.elementwise.tanh",
    "layerkit.primitives.elementwise.where",
    "layerkit.primitives.linalg.einsum",
    "layerkit.primitives.linalg.matmul",
    "layerkit.primitives.linalg.norm",
    "layerkit.primitives.linalg.tensordot",
    "layerkit.primitives.linalg_ops.adjoint",
    "layerkit.primitives.linalg_ops.band_part",
    "layerkit.primitives.linalg_ops.cholesky",
    "layerkit.primitives.linalg_ops.cholesky_solve",
    "layerkit.primitives.linalg_ops.cross",
    "layerkit.primitives.linalg_ops.det",
    "layerkit.primitives.linalg_ops.diag",
    "layerkit.primitives.linalg_ops.diag_part",
    "layerkit.primitives.linalg_ops.eigh",
    "layerkit.primitives.linalg_ops.eigvalsh",
    "layerkit.primitives.linalg_ops.inv",
    "layerkit.primitives.linalg_ops.logdet",
    "layerkit.primitives.linalg_ops.lstsq",
    "layerkit.primitives.linalg_ops.matrix_rank",
    "layerkit.primitives.linalg_ops.matrix_transpose",
    "layerkit.primitives.linalg_ops.matvec",
    "layerkit.primitives.linalg_ops.normalize",
    "layerkit.primitives.linalg_ops.pinv",
    "layerkit.primitives.linalg_ops.qr",
    "layerkit.primitives.linalg_ops.set_diag",
    "layerkit.primitives.linalg_ops.slogdet",
    "layerkit.primitives.linalg_ops.solve",
    "layerkit.primitives.linalg_ops.svd",
    "layerkit.primitives.linalg_ops.trace",
    "layerkit.primitives.linalg_ops.triangular_solve",
    "layerkit.primitives.math_ops.accumulate_n",
    "layerkit.primitives.math_ops.add_n",
    "layerkit.primitives.math_ops.atan2",
    "layerkit.primitives.math_ops.bias_add",
    "layerkit.primitives.math_ops.bincount",
    "layerkit.primitives.math_ops.clip_by_global_norm",
    "layerkit.primitives.math_ops.clip_by_norm",
    "layerkit.primitives.math_ops.confusion_matrix",
    "layerkit.primitives.math_ops.count_nonzero",
    "layerkit.primitives.math_ops.crelu",
    "layerkit.primitives.math_ops.divide_no_nan",
    "layerkit.primitives.math_ops.embedding_lookup",
    "layerkit.primitives.math_ops.erfc",
    "layerkit.primitives.math_ops.global_norm",
    "layerkit.primitives.math_ops.is_inf",
    "layerkit.primitives.math_ops.l2_loss",
    "layerkit.primitives.math_ops.log_poisson_loss",
    "layerkit.primitives.math_ops.log_sigmoid",
    "layerkit.primitives.math_ops.logical_xor",
    "layerkit.primitives.math_ops.multiply_no_nan",
    "layerkit.primitives.math_ops.polyval",
    "layerkit.primitives.math_ops.reciprocal_no_nan",
    "layerkit.primitives.math_ops.reduce_euclidean_norm",
    "layerkit.primitives.math_ops.scalar_mul",
    "layerkit.primitives.math_ops.softsign",
    "layerkit.primitives.math_ops.squared_difference",
    "layerkit.primitives.math_ops.weighted_cross_entropy_with_logits",
    "layerkit.primitives.math_ops.xdivy",
    "layerkit.primitives.math_ops.xlogy",
    "layerkit.primitives.nn.batch_normalization",
    "layerkit.primitives.nn.dropout",
    "layerkit.primitives.nn.elu",
    "layerkit.primitives.nn.gelu",
    "layerkit.primitives.nn.l2_normalize",
    "layerkit.primitives.nn.leaky_relu",
    "layerkit.primitives.nn.log_softmax",
    "layerkit.primitives.nn.moments",
    "layerkit.primitives.nn.relu",
    "layerkit.primitives.nn.relu6",
    "layerkit.primitives.nn.selu",
    "layerkit.primitives.nn.sigmoid_cross_entropy_with_logits",
    "layerkit.primitives.nn.silu",
    "layerkit.primitives.nn.softmax",
    "layerkit.primitives.nn.softmax_cross_entropy_with_logits",
    "layerkit.primitives.nn.softplus",
    "layerkit.primitives.nn.sparse_softmax_cross_entropy_with_logits",
    "layerkit.primitives.random.Generator.categorical",
    "layerkit.primitives.random.Generator.normal",
    "layerkit.primitives.random.Generator.shuffle",
    "layerkit.primitives.random.Generator.truncated_normal",
    "layerkit.primitives.random.Generator.uniform",
    "layerkit.primitives.random.SeedGenerator.__init__",
    "layerkit.primitives.random.categorical",
    "layerkit.primitives.random.normal",
    "layerkit.primitives.random.shuffle",
    "layerkit.primitives.random.truncated_normal",
    "layerkit.primitives.random.uniform",
    "layerkit.primitives.reduce.argmax",
    "layerkit.primitives.reduce.argmin",
    "layerkit.primitives.reduce.cumprod",
    "layerkit.primitives.reduce.cumsum",
    "layerkit.primitives.reduce.reduce_all",
    "layerkit.primitives.reduce.reduce_any",
    "layerkit.primitives.reduce.reduce_logsumexp",
    "layerkit.primitives.reduce.reduce_max",
    "layerkit.primitives.reduce.reduce_mean",
    "layerkit.primitives.reduce.reduce_min",
    "layerkit.primitives.reduce.reduce_prod",
    "layerkit.primitives.reduce.reduce_std",
    "layerkit.primitives.reduce.reduce_sum",
    "layerkit.primitives.reduce.reduce_variance",
    "layerkit.primitives.segment.segment_max",
    "layerkit.primitives.segment.segment_mean",
    "layerkit.primitives.segment.segment_min",
    "layerkit.primitives.segment.segment_prod",
    "layerkit.primitives.segment.segment_sqrt_n",
    "layerkit.primitives.segment.segment_sum",
    "layerkit.primitives.segment.unsorted_segment_max",
    "layerkit.primitives.segment.unsorted_segment_mean",
    "layerkit.primitives.segment.unsorted_segment_min",
    "layerkit.primitives.segment.unsorted_segment_prod",
    "layerkit.primitives.segment.unsorted_segment_sqrt_n",
    "layerkit.primitives.segment.unsorted_segment_sum",
    "layerkit.primitives.selection.boolean_mask",
    "layerkit.primitives.selection.broadcast_dynamic_shape",
    "layerkit.primitives.selection.broadcast_static_shape",
    "layerkit.primitives.selection.ensure_shape",
    "layerkit.primitives.selection.get_static_value",
    "layerkit.primitives.selection.identity",
    "layerkit.primitives.selection.is_tensor",
    "layerkit.primitives.selection.meshgrid",
    "layerkit.primitives.selection.rank",
    "layerkit.primitives.selection.repeat",
    "layerkit.primitives.selection.roll",
    "layerkit.primitives.selection.scatter_nd",
    "layerkit.primitives.selection.sequence_mask",
    "layerkit.primitives.selection.shape",
    "layerkit.primitives.selection.size",
    "layerkit.primitives.selection.tensor_scatter_nd_add",
    "layerkit.primitives.selection.tensor_scatter_nd_update",
    "layerkit.primitives.selection.unravel_index",
    "layerkit.primitives.sorting.argsort",
    "layerkit.primitives.sorting.in_top_k",
    "layerkit.primitives.sorting.searchsorted",
    "layerkit.primitives.sorting.sort",
    "layerkit.primitives.sorting.top_k",
    "layerkit.primitives.sorting.unique",
})


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
