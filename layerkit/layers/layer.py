"""Layer: the base of every layer and model.

The contract is three methods and one way to create state: ``__init__`` stores the
configuration, ``build(input_shape)`` creates weights with :meth:`Layer.add_weight`, and
``call(inputs, training=None)`` computes. ``__call__`` converts inputs, builds on first
use, checks the input spec, resolves ``training`` and calls. Layers, Variables and
lists/tuples/dicts of them assigned as attributes are tracked by ``__setattr__`` (the one
tracking mechanism), in assignment order.

Keras masks (see :mod:`layerkit.layers.masking`) ride on tensors as ``_keras_mask``. Once
any mask can exist, ``__call__`` passes the input masks to a ``call`` that takes ``mask``
(or ``<arg>_mask`` for calls with several tensor arguments) and, for layers that
``supports_masking``, attaches ``compute_mask(inputs, mask)`` to the outputs.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit import constraints, initializers, regularizers
from layerkit._core import context as _context
from layerkit._core.convert import as_dtype, to_array
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import DTypeLike, TensorLike
from layerkit._core.variable import Variable, replace_value
from layerkit.checkpoint import trackable
from layerkit.layers import input_spec as _spec
from layerkit.layers import symbolic as _sym
from layerkit.layers.backend_config import floatx
from layerkit.layers.tracking import Tracked, reset_uids, super_msg, unique_name
from layerkit.primitives import elementwise as _ew
from layerkit.primitives import selection as _selection
from layerkit.primitives.elementwise import cast

__all__ = ["Layer", "reset_uids", "get_keras_mask", "set_keras_mask", "layer_from_config",
           "layer_to_config"]

_STACK: list = []  # (layer, training) for each layer call in progress, outermost first
_GEN = [0]  # incremented by each outermost call; scopes the losses added by add_loss
_CALL_INFO: dict = {}  # class -> whether its call() accepts `training`
_SHAPE_KWARGS = ("input_shape", "batch_input_shape", "input_dim", "batch_size")
_FLAGS = (bool, type(None))  # values of `training` that need no conversion
# class -> (call parameter names, accepts `mask`, {arg: "<arg>_mask"}, passive): passive
# layers take no mask argument and keep the default compute_mask (Dense, Activation, ...)
_MASK_INFO: dict = {}
# Becomes True for good once masks can exist in this process (a mask was attached to a
# tensor, or a layer that makes masks from nothing was created). Until then layer calls
# skip the mask protocol entirely: reading an unset slot costs as much as a small op.
_MASKS = [False]


def get_keras_mask(x: TensorLike) -> Any:
    """The Keras mask attached to tensor ``x`` by the layer that produced it, or None."""
    return getattr(x, "_keras_mask", None) if isinstance(x, Tensor) else None


def set_keras_mask(x: Tensor, mask: Any) -> None:
    """Attach ``mask`` (a boolean tensor, usually ``(batch, time)``) to tensor ``x``;
    layers that accept ``mask`` then receive it, as in Keras."""
    if mask is not None and not isinstance(mask, Tensor):
        mask = wrap(np.asarray(mask))
    x._keras_mask = mask
    _MASKS[0] = True


def enable_masks() -> None:
    """Turn on the mask protocol of layer calls (layers that create masks call this)."""
    _MASKS[0] = True


def _mask_info(cls) -> tuple:
    info = _MASK_INFO.get(cls)
    if info is None:
        params = inspect.signature(cls.call).parameters
        names = tuple(p for p, v in params.items() if p != "self"
                      and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL))
        per_arg = {p: f"{p}_mask" for p in names if f"{p}_mask" in names}
        info = _MASK_INFO[cls] = (names, "mask" in names, per_arg,
                                  "mask" not in names and not per_arg
                                  and cls.compute_mask is Layer.compute_mask)
    return info


def _has_tensor(x) -> bool:
    if isinstance(x, Tensor):
        return True
    return isinstance(x, (list, tuple, dict)) and any(
        isinstance(e, Tensor) for e in _sym.flatten(x))


def _masks_of(x):
    """The masks of ``x``'s tensors, in ``x``'s structure (a single None for a tensor)."""
    if isinstance(x, (list, tuple, dict)):
        return _sym.map_structure(get_keras_mask, x)
    return get_keras_mask(x)


def _numeric_list(x) -> bool:
    """A (nested) list of Python numbers, i.e. one tensor rather than a structure."""
    while isinstance(x, (list, tuple)) and x:
        x = x[0]
    return isinstance(x, (int, float, bool))


def gather_losses(layers) -> list:
    """The ``losses`` of each layer in ``layers`` (not of their sublayers), in order."""
    out: list[Any] = []
    for layer in layers:
        d = layer.__dict__
        if d["_eager_losses"]:
            out.extend(x() if callable(x) else x for x in d["_eager_losses"])
        if d["_loss_gen"] == d["_call_gen"] and d["_losses"]:
            out.extend(d["_losses"])
        if d["_regularizers"]:
            out.extend(reg(v) for v, reg in d["_regularizers"])
    return out


def _names_initializer(name: str) -> bool:
    try:
        initializers.get(name)
    except ValueError:
        return False
    return True


def _policy_dtype(dtype):
    """A Keras 3 ``DTypePolicy`` config (``{"class_name": "DTypePolicy", "config":
    {"name": "float32"}}``) as its variable dtype; other values pass through."""
    if not isinstance(dtype, dict):
        return dtype
    name = (dtype.get("config") or {}).get("name") if isinstance(dtype.get("config"), dict) \
        else None
    if not isinstance(name, str):
        raise ValueError(f"Layer: cannot interpret the dtype policy {dtype!r}")
    if name.startswith("mixed_"):
        warnings.warn(f"Layer: the mixed-precision policy {name!r} runs in float32 in "
                      f"layerkit (its variables' dtype)", stacklevel=4)
        return "float32"
    return name


_SIMPLE = (str, int, float, bool, type(None))


def _simple(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_simple(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _simple(v) for k, v in value.items())
    return isinstance(value, _SIMPLE)


def _auto_config(cls, args: tuple, kwargs: dict):
    """Keras's automatic config of a user subclass: its constructor arguments (defaults
    included) when all are plain JSON values, else None."""
    try:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    params = inspect.signature(cls.__init__).parameters
    config = {}
    for name, value in list(bound.arguments.items())[1:]:
        kind = params[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                return None
        elif kind is inspect.Parameter.VAR_KEYWORD:
            config.update(value)
        elif kind is inspect.Parameter.POSITIONAL_ONLY:
            return None
        else:
            config[name] = value
    for base in ("name", "trainable", "dtype"):  # get_config gives the resolved values
        config.pop(base, None)
    return config if _simple(config) else None


def _wrap_build(fn):
    @functools.wraps(fn)
    def build(self, *args, **kwargs):
        d = self.__dict__
        outer = d.get("_building", False)
        d["_building"] = True
        try:
            fn(self, *args, **kwargs)
        finally:
            d["_building"] = outer
        if not outer:
            d["built"] = True
            d.setdefault("_build_shape", args[0] if args else None)
    return build



def _call_of(layer):
    """``layer.call``, converted by AutoGraph while an ``lk.function`` graph is traced (as
    TensorFlow converts a layer's ``call``): a Python ``if``/``while``/``for`` on traced
    tensors in a user layer becomes graph control flow. Library layers are not converted
    (``convert_callable`` returns them as they are)."""
    if _context.RECORDERS and _context.tracing():
        from layerkit.autograph.transformer import convert_callable

        return convert_callable(layer.call)
    return layer.call

class Layer(Tracked):
    """Base class of all layers (and of ``lk.Model``).

    Args:
        name: unique name; by default the snake_case class name (``dense``, ``dense_1``).
        trainable: whether the layer's weights are trained.
        dtype: the dtype of weights and computations (float inputs are cast to it).
        **kwargs: ``input_shape``, ``batch_input_shape`` or ``input_dim`` (optional, for
            the first layer of a ``Sequential`` model, as Keras) and
            ``activity_regularizer`` (an optional callable on the output, added to
            ``losses``).

    Examples:
        >>> import layerkit as lk
        >>> class Scale(lk.layers.Layer):
        ...     def build(self, input_shape):
        ...         self.w = self.add_weight("w", (input_shape[-1],), initializer="ones")
        ...     def call(self, x):
        ...         return x * self.w
        >>> Scale()(lk.ones((2, 3))).shape
        (2, 3)
    """

    # Instance attributes that __init__ writes through ``__dict__`` (declared for type checkers).
    _dtype: Any
    _batch_input_shape: tuple | None
    _losses: list
    _eager_losses: list
    _regularizers: list
    _loss_gen: int
    activity_regularizer: Any

    input_spec: Any = None   # an InputSpec (or a list of them) set by subclasses
    # Whether compute_mask gives the output masks (Keras: True when the class overrides
    # compute_mask; many built-in layers set it too). Otherwise input masks stop here.
    supports_masking = False
    # Float-math layers (Dense, Conv2D, ...) also cast integer and bool inputs to their
    # dtype, as Keras's do: NumPy promotion would otherwise give a float64 output.
    _cast_int_inputs = False

    # The keywords Layer.__init__'s **kwargs takes (for configs written by Keras 3).
    _closed_init_kwargs = _SHAPE_KWARGS + ("activity_regularizer",)

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if "build" in cls.__dict__:
            cls.build = _wrap_build(cls.__dict__["build"])
        if "compute_mask" in cls.__dict__:
            # Keras: a layer that defines compute_mask supports masking (unless it says).
            if "supports_masking" not in cls.__dict__:
                cls.supports_masking = True
            if not cls.__module__.startswith("layerkit."):
                enable_masks()  # a user's layer may create masks from unmasked inputs

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        # A user's subclass without its own get_config gets Keras's automatic config:
        # the constructor arguments, when they are plain values.
        if not cls.__module__.startswith("layerkit.") and cls.get_config in _DEFAULT_CONFIGS:
            object.__setattr__(self, "_auto_config", _auto_config(cls, args, kwargs))
        return self

    def __init__(self, name: str | None = None, trainable: bool = True, dtype: DTypeLike = None,
                 **kwargs: Any) -> None:
        d = self.__dict__
        unknown = [k for k in kwargs if k not in _SHAPE_KWARGS + ("activity_regularizer",)]
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{unknown}")
        shape = kwargs.get("batch_input_shape")
        if shape is None and kwargs.get("input_shape") is not None:
            shape = (kwargs.get("batch_size"),) + tuple(kwargs["input_shape"])
        elif shape is None and kwargs.get("input_dim") is not None:
            shape = (kwargs.get("batch_size"), kwargs["input_dim"])
        d.update(_tracked={}, _trainable_vars=[], _non_trainable_vars=[], _var_names={},
                 _regularizers=[], _losses=[], _eager_losses=[],
                 _loss_gen=-1, _call_gen=-2, _building=False, built=False,
                 _trainable=bool(trainable), _batch_input_shape=shape,
                 _dtype=as_dtype(_policy_dtype(dtype) if dtype is not None else floatx()))
        d["activity_regularizer"] = regularizers.get(kwargs.get("activity_regularizer"))
        d["name"] = name or unique_name(type(self).__name__)

    # ---- weights ---------------------------------------------------------------------
    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        """Freeze (False) or unfreeze this layer, its weights and all its sublayers."""
        self.__dict__["_trainable"] = bool(value)
        for v in self._trainable_vars:
            v.trainable = bool(value)
        for layer in self.layers:
            layer.trainable = value

    @property
    def dtype(self) -> str:
        return self._dtype.name

    compute_dtype = variable_dtype = dtype

    # ---- the functional graph ------------------------------------------------------------
    def _first_node(self, what: str):
        nodes = self.__dict__.get("_inbound_nodes")
        if not nodes:
            raise AttributeError(f"Layer '{self.name}' has never been called on symbolic "
                                 f"inputs (lk.Input) and thus has no defined {what}")
        return nodes[0]

    @property
    def input(self) -> Any:
        """The symbolic input of this layer's first call in a functional graph (a list
        when that call took several), as Keras's ``layer.input``.

        Raises:
            AttributeError: the layer was never called on symbolic inputs.
        """
        inputs = self._first_node("input").inputs
        return inputs[0] if len(inputs) == 1 else list(inputs)

    @property
    def output(self) -> Any:
        """The symbolic output of this layer's first call in a functional graph, as
        Keras's ``layer.output`` (``lk.Model(model.input, layer.output)`` extracts
        features).

        Raises:
            AttributeError: the layer was never called on symbolic inputs.
        """
        return self._first_node("output").outputs

    def add_weight(self, name: str | None = None, shape: Sequence[int] | None = None,
                   initializer: Any = None, dtype: DTypeLike = None, trainable: bool = True,
                   regularizer: Any = None, constraint: Any = None) -> Variable:
        """Create a weight Variable owned by this layer (call it in __init__ or build).

        Keras 3's positional order ``add_weight(shape, initializer, dtype)`` works too.

        Args:
            name: the weight's name, unique within the layer (``kernel``, ``bias``).
            shape: its shape (a tuple).
            initializer: initializer or its name; default ``'glorot_uniform'`` for float
                weights and ``'zeros'`` otherwise.
            dtype: default the layer's dtype.
            trainable: whether optimizers train it.
            regularizer: callable or name; its penalty is added to ``losses``.
            constraint: a constraint (``lk.constraints``, a name or a callable) the
                optimizer applies to the weight after each update.

        Raises:
            ValueError: if the layer is already built (state is locked after build).
        """
        if "_tracked" not in self.__dict__:
            raise RuntimeError(super_msg(self))
        if name is not None and not isinstance(name, str):
            # Keras 3 order: add_weight(shape, initializer, dtype, ...) (a second string that
            # names no initializer is taken as the weight's name, as before)
            name, shape, second = None, name, shape
            if isinstance(second, str) and not _names_initializer(second):
                name = second
            elif second is not None:
                if initializer is not None:
                    if dtype is not None:
                        raise TypeError(f"add_weight on layer '{self.name}': got the "
                                        f"initializer twice ({second!r} and {initializer!r})")
                    dtype = initializer  # the third positional argument in Keras 3
                initializer = second
        shape = () if shape is None else tuple(int(s) for s in shape)
        dtype = as_dtype(dtype) or self._dtype
        if initializer is None:
            initializer = "glorot_uniform" if dtype.kind == "f" else "zeros"
        init = initializers.get(initializer)
        name = name or "variable"
        # A value parked by a checkpoint restore replaces the initial value: the
        # initializer does not run, so it draws nothing from lk.random's global generator
        # (a restored generator state then continues exactly as in the saved run).
        parked = trackable.has_deferred(self, name)
        try:
            value = np.zeros(shape, dtype) if parked else to_array(init(shape, dtype=dtype),
                                                                    dtype)
        except ValueError as e:
            raise ValueError(f"{type(self).__name__} '{self.name}': cannot create weight "
                             f"'{name}' of shape {shape} and dtype {dtype.name}: {e}") from e
        constraint = constraints.get(constraint)
        var = Variable(value, trainable=trainable and self._trainable, name=name, dtype=dtype)
        var.constraint = constraint
        self._track_variable(var, name, trainable=trainable)
        try:  # a value a checkpoint restore parked for this weight
            restored = trackable.apply_deferred(self, self._var_names[id(var)], var)
            if parked and not restored:  # it was parked under another (unique) name
                replace_value(var, to_array(init(shape, dtype=dtype), dtype))
        except Exception:
            # It does not fit (a model built differently from the saved one). The error
            # names the file and path; the layer is left without the half-made weight.
            del self._var_names[id(var)]
            for lst in (self._trainable_vars, self._non_trainable_vars):
                lst[:] = [v for v in lst if v is not var]
            raise
        if regularizer is not None:
            self._regularizers.append((var, regularizers.get(regularizer)))
        return var

    def get_weights(self) -> list:
        """The values of :attr:`weights` as NumPy arrays (copies)."""
        return [v.numpy() for v in self.weights]  # Variable.numpy() is a copy

    def set_weights(self, weights: Sequence[TensorLike]) -> None:
        """Assign :attr:`weights` from a list of arrays in :meth:`get_weights` order.

        Raises:
            ValueError: naming the layer and the weight when a count or shape differs.
            TypeError: an array holds Python objects (such as None) instead of numbers.
        """
        own = self.weights
        weights = list(weights)
        if len(own) != len(weights):
            raise ValueError(f"set_weights on layer '{self.name}': expected {len(own)} "
                             f"arrays ({[v.name for v in own]}), received {len(weights)}")
        arrays = []
        for v, w in zip(own, weights):
            try:
                w = to_array(w)
            except (TypeError, ValueError) as e:
                raise TypeError(f"set_weights on layer '{self.name}': weight '{v.name}' "
                                f"received a {type(w).__name__} that is not a numeric array "
                                f"({e})") from None
            if w.dtype.kind == "O":
                raise TypeError(f"set_weights on layer '{self.name}': weight '{v.name}' "
                                f"received an array of Python objects (dtype object, e.g. "
                                f"containing None); expected numbers")
            if tuple(w.shape) != tuple(v.shape):
                raise ValueError(f"set_weights on layer '{self.name}': weight '{v.name}' has "
                                 f"shape {tuple(v.shape)}, received an array of shape "
                                 f"{tuple(w.shape)}")
            arrays.append(w)
        for v, w in zip(own, arrays):
            v.assign(w.astype(v.dtype))

    def count_params(self) -> int:
        """Total number of scalars in :attr:`weights`."""
        ws = self.weights
        if not ws and not self.built:
            raise ValueError(f"count_params: layer '{self.name}' is not built yet; call it "
                             f"on data or call build(input_shape) first")
        return int(sum(int(np.prod(v.shape)) for v in ws))

    # ---- losses --------------------------------------------------------------------
    def add_loss(self, loss: Any) -> None:
        """Add a scalar loss; inside call() it lasts until the next outermost call."""
        if not _STACK:
            self._eager_losses.append(loss)
            return
        if self._loss_gen != _GEN[0]:
            self.__dict__.update(_losses=[], _loss_gen=_GEN[0])
        self._losses.append(loss)

    @property
    def losses(self) -> list:
        """Losses from add_loss during the latest call, plus weight regularizer penalties
        (recomputed from the current weights), of this layer and its sublayers."""
        return gather_losses([self] + self.submodules)

    # ---- calling -------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Create weights from ``input_shape`` (a tuple incl. the batch dim, or a list)."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"layer '{self.name}' ({type(self).__name__}) must "
                                  f"implement call()")

    def _where(self) -> str:
        parts = [f"layer '{self.name}'"]
        for layer, _ in reversed(_STACK):
            if layer is not self:
                kind = "model" if any(c.__name__ == "Model" for c in type(layer).__mro__) \
                    else "layer"
                parts.append(f"{kind} '{layer.name}'")
        return " of ".join(parts)

    def _convert(self, x, top: bool = True):
        if isinstance(x, Tensor):
            kind = x.dtype.kind
            if (kind == "f" or (kind in "iub" and self._cast_int_inputs)) \
                    and x.dtype != self._dtype:
                y = cast(x, self._dtype)
                if _MASKS[0] and get_keras_mask(x) is not None:
                    y._keras_mask = x._keras_mask
                return y
            return x
        if isinstance(x, (list, tuple)) and x and any(
                isinstance(e, (Tensor, np.ndarray, _sym.SymbolicTensor, list, tuple))
                and not _numeric_list(e) for e in x):
            return type(x)(self._convert(e, False) for e in x)  # a structure of inputs
        if isinstance(x, np.ndarray) or (top and isinstance(x, (list, tuple)) and x):
            a = to_array(x)
            cast_it = a.dtype.kind == "f" or (a.dtype.kind in "iub" and self._cast_int_inputs)
            return wrap(a.astype(self._dtype) if cast_it else a)
        return x

    def _build_from(self, args: tuple, kwargs: dict) -> None:
        def shape_of(x):
            if isinstance(x, (list, tuple)):
                return [shape_of(e) for e in x]
            return tuple(x.shape) if hasattr(x, "shape") else None
        params = list(inspect.signature(self.build).parameters)
        if len(params) <= 1 or not all(p.endswith("_shape") for p in params):
            self.build(shape_of(args[0]) if args else None)
        else:  # build(query_shape, value_shape, ...) gets the matching call arguments
            bound = inspect.signature(self.call).bind_partial(*args, **kwargs).arguments
            shapes = {p: shape_of(bound[p[:-6]]) for p in params if p[:-6] in bound}
            self.__dict__["_build_shapes_dict"] = shapes
            self.build(**shapes)
        self.__dict__["built"] = True
        self.__dict__.setdefault("_build_shape", shape_of(args[0]) if args else None)

    def _call_accepts_training(self) -> bool:
        accepts = _CALL_INFO.get(type(self))
        if accepts is None:
            accepts = _CALL_INFO[type(self)] = "training" in inspect.signature(
                self.call).parameters
        return accepts

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if "_tracked" not in d:
            raise RuntimeError(super_msg(self))
        # 1. convert inputs (float arrays and tensors to the layer's dtype)
        symbolic = False
        if not (len(args) == 1 and type(args[0]) is Tensor and args[0]._v.dtype == d["_dtype"]
                and (not kwargs or (len(kwargs) == 1 and type(kwargs.get("training", 0)) in
                                    _FLAGS))):
            if args and args[0] is None:
                raise ValueError(
                    f"{self._where()} ({type(self).__name__}) received None as its input; "
                    f"expected a tensor (or a structure of tensors). Only input tensors may "
                    f"be passed as positional arguments")
            args = tuple(self._convert(a) for a in args)
            kwargs = {k: self._convert(v, False) if isinstance(v, (Tensor, np.ndarray)) else v
                      for k, v in kwargs.items()}
            symbolic = _sym.any_symbolic(args, kwargs)
        # 2. check the input spec, 3. build on first use
        spec = self.input_spec
        if spec is not None and args:
            x = args[0]
            if type(x) is Tensor:
                # Steps repeat one input shape: re-check only when it (or the spec) changes.
                key = (spec, x._v.shape, x._v.dtype)
                if d.get("_spec_ok") != key:
                    self._check_spec(x)
                    d["_spec_ok"] = key
            else:
                self._check_spec(x)
        if not d["built"]:
            self._build_from(args, kwargs)
            if self.input_spec is not None and args:
                self._check_spec(args[0])
        if symbolic:
            return _sym.call(self, args, kwargs)
        # 4. training: explicit argument, else the enclosing call's value
        training = kwargs.pop("training", None)
        if training is None and _STACK:
            training = _STACK[-1][1]
        if training is not None and self._call_accepts_training():
            kwargs["training"] = training
        if not _STACK:
            _GEN[0] += 1
        d["_call_gen"] = _GEN[0]
        # 5. call
        _STACK.append((self, training))
        try:
            if _MASKS[0] or "mask" in kwargs:
                outputs = self._call_with_masks(args, kwargs)
            else:
                outputs = _call_of(self)(*args, **kwargs)
        except ValueError as e:
            if getattr(e, "_lk_layer", False):
                raise
            raise self._annotated(e, args) from e
        finally:
            _STACK.pop()
        if d["activity_regularizer"] is not None:
            for out in _sym.flatten(outputs):  # Keras: penalty / batch size, per output
                batch = _selection.element_count(out, 0, out.dtype) if out.ndim else 1
                batch = (_ew.maximum(batch, 1.0) if isinstance(batch, Tensor)  # run time
                         else float(max(batch, 1)))
                self.add_loss(d["activity_regularizer"](out) / batch)
        return outputs

    # ---- masks (Keras semantics) -------------------------------------------------------
    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The mask(s) of this layer's outputs, given its inputs and their ``mask``.

        The default passes the input mask through; layers that change the time axis or
        create masks (``Embedding(mask_zero=True)``, ``Masking``, RNNs) override it.
        """
        return mask

    def _call_with_masks(self, args: tuple, kwargs: dict):
        """``call`` with Keras's mask protocol: a ``mask`` (or ``<arg>_mask``) argument
        is filled from the masks attached to the inputs, and the masks given by
        :meth:`compute_mask` are attached to outputs that have none."""
        names, takes_mask, per_arg, passive = _mask_info(type(self))
        if passive and len(args) == 1 and "mask" not in kwargs and isinstance(args[0], Tensor) \
                and getattr(args[0], "_keras_mask", None) is None:
            return _call_of(self)(*args, **kwargs)  # nothing to read, nothing to attach
        bound = dict(zip(names, args))
        bound.update(kwargs)
        tensors = [k for k, v in bound.items() if k != "mask" and _has_tensor(v)]
        if takes_mask and kwargs.get("mask") is None and len(tensors) == 1:
            kwargs["mask"] = _masks_of(bound[tensors[0]])
        elif len(tensors) > 1:
            for k in tensors:
                if k in per_arg and kwargs.get(per_arg[k]) is None:
                    kwargs[per_arg[k]] = _masks_of(bound[k])
        first = args[0] if args else bound.get(names[0]) if names else None
        previous = kwargs.get("mask")
        if previous is None:
            previous = _masks_of(first)
        outputs = _call_of(self)(*args, **kwargs)
        if self.supports_masking:
            flat = _sym.flatten(outputs)
            if not all(get_keras_mask(t) is not None for t in flat):
                masks = self.compute_mask(first, previous)
                if masks is not None:
                    for t, m in zip(flat, _sym.flatten(masks)):
                        if m is not None and isinstance(t, Tensor) \
                                and get_keras_mask(t) is None:
                            set_keras_mask(t, m)
        elif not takes_mask and any(m is not None for m in _sym.flatten(previous)):
            # (a layer whose call takes `mask` consumed it: GlobalAveragePooling1D, ...)
            warnings.warn(f"Layer '{self.name}' (of type {type(self).__name__}) was passed an "
                          f"input with a mask attached to it, but it does not support masking "
                          f"and drops the mask: later layers will not see it.", stacklevel=3)
        return outputs

    def _check_spec(self, x) -> None:
        try:
            _spec.check(self.input_spec, x, self._where)
        except ValueError as e:
            e._lk_layer = True
            raise

    def _annotated(self, e: ValueError, args: tuple) -> ValueError:
        def shape_of(a):  # nested lists/tuples/dicts of inputs show their leaves' shapes
            if hasattr(a, "shape"):
                return tuple(a.shape)
            if isinstance(a, (list, tuple)):
                return [shape_of(b) for b in a]
            if isinstance(a, dict):
                return {k: shape_of(b) for k, b in a.items()}
            return type(a).__name__
        shapes = [shape_of(a) for a in args]
        built = self.__dict__.get("_build_shape")
        built = f"; built for input shape {built}" if built is not None else ""
        msg = (f"Exception encountered when calling {self._where()} "
               f"({type(self).__name__}; input shape(s) {shapes}{built}): {e}")
        if type(e) is ValueError:
            e = ValueError(msg)
        else:
            e.add_note(msg)
        e._lk_layer = True
        return e

    def compute_output_shape(self, input_shape: Any) -> Any:
        """Output shape(s) for ``input_shape`` (None for unknown dims), found by running
        the layer on small zero batches."""
        return _sym.output_shape(self, input_shape)

    # ---- config and checkpoints ------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments as a JSON-able dict (``from_config`` inverts it).

        A user's subclass that does not override it gets Keras 3's automatic config:
        its constructor arguments, when they are all plain values (numbers, strings,
        booleans, None and lists/dicts of them).

        Raises:
            NotImplementedError: a subclass whose constructor takes other arguments and
                that does not override ``get_config``.
        """
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = tuple(self._batch_input_shape)
        if type(self).get_config in _DEFAULT_CONFIGS:
            auto = self.__dict__.get("_auto_config")
            if auto is not None:
                return {**config, **auto}
            base = set(inspect.signature(Layer.__init__).parameters)
            extra = [p for p, v in inspect.signature(type(self).__init__).parameters.items()
                     if p not in base and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]
            if extra:
                raise NotImplementedError(
                    f"Layer {type(self).__name__} has arguments {extra} in __init__ that are "
                    f"not plain values (numbers, strings, lists, ...), so it must override "
                    f"get_config() to return them (and from_config() if needed)")
        return config

    @classmethod
    def from_config(cls, config: dict) -> Any:
        """Create a layer from :meth:`get_config`'s output (Keras 3's configs too).

        ``name``, ``trainable`` and ``dtype`` are set after construction when the
        constructor does not take them.
        """
        from layerkit._core.serialization import init_kwargs

        config = init_kwargs(cls, config)
        late = {}
        params = inspect.signature(cls.__init__).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            late = {k: config.pop(k) for k in ("name", "trainable", "dtype")
                    if k in config and k not in params}
        layer = cls(**config)
        if "name" in late:
            layer.__dict__["name"] = late["name"]
        if "trainable" in late:
            layer.trainable = bool(late["trainable"])
        return layer

    def get_build_config(self) -> dict | None:
        """The input shape(s) the layer was built for (``build_from_config`` rebuilds it),
        or None when it is not built."""
        if not self.built:
            return None
        shapes = self.__dict__.get("_build_shapes_dict")
        if shapes:
            return {"shapes_dict": {k: _shape_list(v) for k, v in shapes.items()}}
        shape = self.__dict__.get("_build_shape")
        return {"input_shape": _shape_list(shape)} if shape is not None else None

    def build_from_config(self, config: dict) -> None:
        """Create the weights from :meth:`get_build_config` output (Keras's too)."""
        if not config:
            return
        if "input_shape" in config:
            shape = _shape_tuple(config["input_shape"])
            self.build(shape)
            self.__dict__.setdefault("_build_shape", shape)
        elif "shapes_dict" in config:
            shapes = {k: _shape_tuple(v) for k, v in config["shapes_dict"].items()}
            self.__dict__["_build_shapes_dict"] = shapes
            self.build(**shapes)
            self.__dict__.setdefault("_build_shape", next(iter(shapes.values()), None))
        self.__dict__["built"] = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def layer_from_config(spec, custom_objects: dict | None = None) -> Layer:
    """A new layer from its serialized config (``{'class_name': ..., 'config': ...}``,
    Keras 3's schema or the older two-key form); wrappers use it for the layers they hold.

    The class is found as :func:`layerkit.saving.deserialize_keras_object` finds it:
    ``custom_objects``, the active custom-object scope, the ``lk.saving`` registry, then
    layerkit's built-ins. A value that is not a dict (a layer already) passes through.

    Raises:
        ValueError: the class is unknown (the message says how to provide it).
    """
    if not isinstance(spec, dict):
        return spec
    from layerkit.saving.serialization_lib import deserialize_keras_object

    return deserialize_keras_object(spec, custom_objects, kind="layers")


def layer_to_config(layer: Layer) -> dict:
    """The serialized config of a layer a wrapper holds (Keras 3's schema; the inverse of
    :func:`layer_from_config`)."""
    from layerkit.saving.serialization_lib import serialize_keras_object

    return serialize_keras_object(layer)


_DEFAULT_CONFIGS = {Layer.get_config}


def _shape_list(shape):
    """A (nested) shape as JSON lists: ``(None, 3)`` -> ``[None, 3]``."""
    if isinstance(shape, (list, tuple)):
        return [_shape_list(d) for d in shape]
    if isinstance(shape, dict):
        return {k: _shape_list(v) for k, v in shape.items()}
    return None if shape is None else int(shape)


def _shape_tuple(shape):
    """JSON lists back to a shape: a list of ints/None is a tuple, a list of lists a
    list of tuples, a dict maps to shapes."""
    if isinstance(shape, dict):
        return {k: _shape_tuple(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)):
        if any(isinstance(d, (list, tuple, dict)) for d in shape):
            return [_shape_tuple(d) for d in shape]
        return tuple(None if d is None else int(d) for d in shape)
    return shape
