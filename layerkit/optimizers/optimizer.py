"""The optimizer base: Keras 3's ``build`` / ``update_step`` contract, and fused kernels.

An optimizer's state is ``iterations`` (int64, non-trainable), the learning rate
(a float Variable, or a schedule evaluated at ``iterations``) and per-variable *slots*
created by :meth:`Optimizer.build` at the first ``apply_gradients``, in variable order.
The base class does the bookkeeping: gradient conversion, clipping (Keras 3 rules),
decoupled weight decay, slot creation, deferred checkpoint restore and the step counter.

Two ways to compute an update, with the same numbers (within float32 rounding):

- the reference path, Keras 3's contract: ``update_step(gradient, variable,
  learning_rate)`` written with layerkit ops and ``self.assign*``, called once per
  variable. Every optimizer has it; a user optimizer defines only ``build`` and
  ``update_step`` (see :class:`Optimizer`).
- the fused path of the built-ins: one in-place NumPy kernel (``_kernel``) over arrays
  that the optimizer owns, with ufuncs writing ``out=`` into the variable's and the
  slots' own buffers. Measured here (shared/FACTS.md) numexpr is slower than NumPy for
  float32, and an eager-op chain allocates a temporary per op. Large arrays are
  processed in blocks that stay in cache (a 400k-element Adam update: 1.72 ms whole,
  1.15-1.28 ms in blocks of 32-64k elements on this machine), and small variables share
  flat buffers (one kernel call for all of them). A built-in declares its slots in
  ``_slot_names`` (created by ``build`` in that order, starting at ``_slot_init``) and
  defines ``_constants(lr, step)`` (per-step Python floats) and ``_kernel(v, g, slots,
  scratch, consts)`` (the in-place update of one array, with ``_num_scratch`` temporary
  arrays). ``use_fused_kernel = False`` on an instance forces the reference path; a
  subclass that overrides ``update_step`` or ``build`` of a built-in uses its own
  ``update_step``.

Inside ``lk.function`` (a traced train step), ``apply``/``apply_gradients`` records one
Python-call node (``layerkit._core.effects.python_call``, no outputs) that runs the same
update on the gradient arrays: the graph re-runs it on every call, reading the learning
rate, schedule and ``iterations`` live, so traced and eager steps give the same numbers.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

import numpy as np

from layerkit._core import context, distribution
from layerkit._core.effects import python_call
from layerkit._core.serialization import init_kwargs
from layerkit._core.tensor import Tensor
from layerkit._core.tuning import OPTIMIZER_BLOCK as BLOCK
from layerkit._core.tuning import OPTIMIZER_GROUP_MAX as GROUP_MAX
from layerkit._core.types import DTypeLike, ShapeLike, TensorLike
from layerkit._core.variable import KEEPERS, Variable, adopt, keep_reads, replace_value, writable
from layerkit.checkpoint import trackable
from layerkit.optimizers import schedules as _schedules

#: what ``learning_rate=`` accepts: a number, a scalar tensor, a schedule or a
#: zero-argument callable returning the rate.
LearningRateLike: TypeAlias = (
    "float | Tensor | _schedules.LearningRateSchedule | Callable[[], float]")

def _array(g) -> np.ndarray:
    if isinstance(g, Tensor):
        g = g._v
    if type(g) is not np.ndarray:
        g = np.asarray(g)
    return g


class _Group:
    """Small variables updated together through flat buffers (see ``_make_groups``)."""

    def __init__(self, variables: list, slot_lists: list) -> None:
        self.vars = variables
        self.slots = slot_lists
        self.decays = None
        dtype = variables[0]._v.dtype
        sizes = [v._v.size for v in variables]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        total = int(offsets[-1])
        self.vbuf = np.empty(total, dtype)
        self.gbuf = np.empty(total, dtype)
        nslots = len(slot_lists[0])
        self.sbufs = [np.empty(total, dtype) for _ in range(nslots)]
        self.vviews, self.sviews = [], []
        for k, var in enumerate(variables):
            a, b = offsets[k], offsets[k + 1]
            shape = var._v.shape
            view = self.vbuf[a:b].reshape(shape)
            adopt(var, view)
            self.vviews.append(view)
            sv = []
            for j, slot in enumerate(slot_lists[k]):
                s = self.sbufs[j][a:b].reshape(shape)
                adopt(slot, s)
                sv.append(s)
            self.sviews.append(sv)


def _keep_reads(work: list, iterations: Variable) -> None:
    # The variables, their slots and the step counter are about to change.
    keep_reads(*[item[0] for item in work], *[s for item in work for s in item[2][1]],
               iterations)


def _owner(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO that defines attribute ``name``."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return object


class Optimizer:
    """Base class of layerkit optimizers (Keras 3's contract and semantics).

    A new optimizer subclasses ``Optimizer`` and defines two methods, with public names
    only:

    - ``build(variables)``: call ``super().build(variables)``, then create the slots of
      each variable with :meth:`add_variable_from_reference` (same shape and dtype, e.g.
      a momentum) or other state with :meth:`add_variable`. The first
      ``apply``/``apply_gradients`` calls it (``if self.built: return`` first, as in Keras).
    - ``update_step(gradient, variable, learning_rate)``: update one variable, written
      with layerkit ops (``lk.sqrt``, ``lk.square``, Tensor operators) and
      :meth:`assign` / :meth:`assign_add` / :meth:`assign_sub`. ``gradient`` is a Tensor
      of the variable's dtype (already clipped), ``learning_rate`` the float32
      learning-rate Variable (or the schedule's value), ``self.iterations`` the number of
      steps taken before this one. Read a slot back with :meth:`get_slot`.

    Everything else comes from the base class: gradient clipping, decoupled weight
    decay, skipping None gradients, ``iterations``, learning-rate schedules, weight
    constraints, ``lk.function`` (the update becomes one stateful graph node), ``fit``,
    checkpoints (slots saved as ``<name>/<variable index>``, restored even before they
    exist) and ``.keras`` files (``get_config``: add your constructor arguments).

    The built-ins (SGD, Adam, AdamW, RMSprop, Adagrad) also have a fused NumPy kernel,
    used instead of ``update_step`` unless ``use_fused_kernel`` is set to False on the
    instance (their ``update_step`` is the reference the kernels are tested against).

    After updating a variable that has a ``constraint`` (``add_weight(constraint=...)``,
    ``kernel_constraint=`` of a layer), the optimizer assigns ``constraint(variable)``
    to it, as Keras 3 does.

    Args:
        learning_rate: a float, a :class:`~layerkit.optimizers.schedules.LearningRateSchedule`
            or a zero-argument callable.
        weight_decay: decoupled weight decay: before each update
            ``v -= v * weight_decay * learning_rate`` (skipped for excluded variables).
        clipnorm: clip each gradient to this L2 norm.
        clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
        global_clipnorm: clip all gradients together to this global L2 norm.
        name: a name used in configs and slot variable names.

    Raises:
        ValueError: more than one of ``clipnorm``, ``clipvalue``, ``global_clipnorm``,
            or an invalid learning rate.

    Examples:
        SGD with momentum as a user optimizer:

        >>> import layerkit as lk
        >>> class Momentum(lk.optimizers.Optimizer):
        ...     def __init__(self, learning_rate=0.1, momentum=0.9, **kwargs):
        ...         super().__init__(learning_rate=learning_rate, **kwargs)
        ...         self.momentum = momentum
        ...     def build(self, variables):
        ...         if self.built:
        ...             return
        ...         super().build(variables)
        ...         for v in variables:
        ...             self.add_variable_from_reference(v, "velocity")
        ...     def update_step(self, gradient, variable, learning_rate):
        ...         m = self.get_slot(variable, "velocity")
        ...         self.assign(m, m * self.momentum - gradient * learning_rate)
        ...         self.assign_add(variable, m)
        ...     def get_config(self):
        ...         return {**super().get_config(), "momentum": self.momentum}
        >>> v = lk.Variable([1.0, 2.0])
        >>> opt = Momentum()
        >>> for _ in range(2):
        ...     _ = opt.apply_gradients([(lk.constant([1.0, 1.0]), v)])
        >>> v.numpy().round(4)   # velocity -0.1, then -0.19
        array([0.71, 1.71], dtype=float32)
        >>> [w.name for w in opt.variables]
        ['iteration', 'learning_rate', 'Variable_velocity']
    """

    _slot_names: tuple = ()
    _slot_init: dict = {}
    _num_scratch = 1
    _default_name = "optimizer"
    _fused = False  # the class has a NumPy kernel that matches its update_step
    #: False forces :meth:`update_step` (layerkit ops) instead of a built-in's fused kernel.
    use_fused_kernel = True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # A kernel stands for update_step only if its class is at least as derived as
        # the ones defining update_step and build (a subclass overriding either of them
        # takes the reference path).
        k = _owner(cls, "_kernel")
        cls._fused = k is not Optimizer and all(
            issubclass(k, _owner(cls, m)) for m in ("update_step", "build"))

    def __init__(self, learning_rate: LearningRateLike = 0.001, weight_decay: float | None = None,
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None, name: str | None = None) -> None:
        n_clip = sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm))
        if n_clip > 1:
            raise ValueError(
                f"{type(self).__name__}: only one of clipnorm, clipvalue and global_clipnorm "
                f"can be set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                f"global_clipnorm={global_clipnorm}"
            )
        for arg, val in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                         ("global_clipnorm", global_clipnorm), ("weight_decay", weight_decay)):
            if val is not None and not (isinstance(val, (int, float)) and val >= 0):
                raise ValueError(
                    f"{type(self).__name__}: {arg} must be a non-negative number or None. "
                    f"Received: {arg}={val!r}"
                )
        self.name = name or self._default_name
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        self.iterations = Variable(np.int64(0), trainable=False, name="iteration", dtype="int64")
        self._lr_var: Variable | None = None
        self._lr_fn = None
        self._set_learning_rate(learning_rate)
        # id(var) -> [index, slot Variables, decays?, group]; slots in creation order.
        self._records: dict[int, list] = {}
        # checkpoint key -> every Variable made by add_variable*, in creation order
        self._slot_vars: dict[str, Variable] = {}
        self._unowned: list = []  # those made by add_variable (no reference variable)
        self._tracked: list = []  # keeps the indexed variables alive (ids stay unique)
        self._exclude_ids: set = set()
        self._exclude_names: tuple = ()
        self._scratch: dict = {}
        self._groups: list = []
        self.built = False
        # lk.distribute: an optimizer created in a strategy's scope all-reduces gradients
        self._distribute = distribution.scope

    # ---- learning rate --------------------------------------------------------------
    def _set_learning_rate(self, lr) -> None:
        if isinstance(lr, _schedules.LearningRateSchedule) or (
                callable(lr) and not isinstance(lr, Tensor)):
            self._lr_fn = lr
            return
        if isinstance(lr, Tensor):
            lr = float(lr)
        if isinstance(lr, bool) or not isinstance(lr, (int, float, np.floating, np.integer)):
            raise ValueError(
                f"{type(self).__name__}: learning_rate must be a float, a "
                f"LearningRateSchedule or a callable. Received: learning_rate={lr!r}"
            )
        if self._lr_fn is not None and isinstance(self._lr_fn, _schedules.LearningRateSchedule):
            raise TypeError(
                f"{type(self).__name__} was created with a LearningRateSchedule; its learning "
                f"rate cannot be set to a float"
            )
        if self._lr_var is None:
            self._lr_var = Variable(np.float32(lr), trainable=False, name="learning_rate")
        else:
            self._lr_var.assign(np.float32(lr))

    @property
    def learning_rate(self) -> Variable | float:
        """The learning rate: the float Variable, or the schedule's current value."""
        if self._lr_fn is None and self._lr_var is not None:  # (set unless a schedule)
            return self._lr_var
        return self._current_lr()

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        self._set_learning_rate(value)

    def _current_lr(self) -> float:
        fn = self._lr_fn
        if fn is None:
            return float(self._lr_var._v)
        if isinstance(fn, _schedules.LearningRateSchedule):
            return float(fn(int(self.iterations._v)))
        return float(fn())

    # ---- slots ------------------------------------------------------------------------
    def build(self, variables: Sequence[Variable]) -> None:
        """Index ``variables`` and create a built-in's slots (the first apply calls it).

        A subclass that creates its own slots overrides it: ``if self.built: return``,
        ``super().build(variables)``, then :meth:`add_variable_from_reference` per
        variable (see the class docstring).

        Raises:
            TypeError: an element is not an ``lk.Variable``.
        """
        variables = list(variables)
        for v in variables:
            if id(v) not in self._records:
                self._register(v)
        if not self.built and self._fused and self.use_fused_kernel:
            self._make_groups(variables)
        self.built = True

    def _register(self, var: Variable) -> list:
        """Give ``var`` its index (and a built-in's declared slots)."""
        if not isinstance(var, Variable):
            raise TypeError(
                f"{type(self).__name__}: can only update lk.Variable objects, received "
                f"{type(var).__name__}"
            )
        index = len(self._tracked)
        self._tracked.append(var)
        rec = [index, [], self._decays(var), None]  # [index, slots, decays?, group]
        self._records[id(var)] = rec
        for sname in self._slot_names:
            self.add_variable_from_reference(var, sname, self._slot_init.get(sname, 0.0))
        return rec

    def _late(self, var: Variable) -> list:
        """The record of a variable first seen after ``build``: a built-in creates its
        slots now; an optimizer with its own ``build`` cannot (as in Keras)."""
        if _owner(type(self), "build") is Optimizer:
            return self._register(var)
        raise ValueError(
            f"{type(self).__name__}: unknown variable '{getattr(var, 'name', var)}': this "
            f"optimizer was built for {len(self._tracked)} other variables; create a new "
            f"optimizer for a new set of variables")

    def _new_variable(self, key: str, shape, initializer, dtype, name: str) -> Variable:
        if isinstance(initializer, (int, float)) or initializer in ("zeros", "ones"):
            fill = {"zeros": 0.0, "ones": 1.0}.get(initializer, initializer)
            value = np.full(shape, fill, dtype=dtype)
        else:
            from layerkit import initializers

            value = np.asarray(initializers.get(initializer)(tuple(shape), dtype), dtype)
        var = Variable(value, trainable=False, name=name)
        trackable.apply_deferred(self, key, var)  # names file and path on a misfit
        self._slot_vars[key] = var
        return var

    def add_variable(self, shape: ShapeLike, initializer: Any = "zeros", dtype: DTypeLike = None,
                     aggregation: str = "none",
                     name: str | None = None) -> Variable:
        """A new non-trainable optimizer Variable (saved in checkpoints as ``name``).

        Args:
            shape: its shape.
            initializer: a number, an initializer name (``'zeros'``) or object.
            dtype: its dtype (default float32).
            aggregation: accepted for Keras compatibility (unused).
            name: its name (default ``'variable'``); a repeated name gets a suffix
                ``_1``, ``_2`` in checkpoints.

        Returns:
            The Variable, also listed in :attr:`variables`.
        """
        name = name or "variable"
        key, n = name, 0
        while key in self._slot_vars:
            n += 1
            key = f"{name}_{n}"
        var = self._new_variable(key, tuple(shape), initializer, np.dtype(dtype or "float32"),
                                 name)
        self._unowned.append(var)
        return var

    def add_variable_from_reference(self, reference_variable: Variable, name: str | None = None,
                                    initializer: Any = "zeros") -> Variable:
        """A slot of ``reference_variable``: a Variable of its shape and dtype, named
        ``<variable name>_<name>``, read back with :meth:`get_slot`.

        Args:
            reference_variable: a variable the optimizer updates.
            name: the slot's name (default ``'var'``), unique per variable.
            initializer: a number, an initializer name (``'zeros'``) or object.

        Returns:
            The slot Variable (saved in checkpoints as ``<name>/<variable index>``).

        Raises:
            ValueError: the variable already has a slot of this name.
        """
        name = name or "var"
        rec = self._records.get(id(reference_variable))
        if rec is None:
            rec = self._register(reference_variable)
        key = f"{name}/{rec[0]}"
        if key in self._slot_vars:
            raise ValueError(
                f"{type(self).__name__}: variable '{reference_variable.name}' already has "
                f"a slot named {name!r}")
        slot = self._new_variable(key, reference_variable.shape, initializer,
                                  reference_variable.dtype, f"{reference_variable.name}_{name}")
        rec[1].append(slot)
        return slot

    def add_optimizer_variables(self, trainable_variables: Sequence[Variable],
                                name: str | Sequence[str],
                                initializer: Any = "zeros") -> list | tuple:
        """:meth:`add_variable_from_reference` for each variable (Keras 3).

        Returns:
            The list of slots, or a tuple of such lists when ``name`` is a list of names.
        """
        if isinstance(name, (list, tuple)):
            return tuple(self.add_optimizer_variables(trainable_variables, n, initializer)
                         for n in name)
        return [self.add_variable_from_reference(v, name, initializer)
                for v in trainable_variables]

    def get_slot(self, var: Variable, slot_name: str) -> Variable:
        """The slot Variable ``slot_name`` (e.g. ``'m'``) of ``var``.

        Raises:
            KeyError: the variable has no slots yet or the name is unknown.
        """
        rec = self._records.get(id(var))
        slot = None if rec is None else self._slot_vars.get(f"{slot_name}/{rec[0]}")
        if slot is None:
            names = [] if rec is None else [k.rsplit("/", 1)[0] for k, s in
                                             self._slot_vars.items() if any(s is x for x in rec[1])]
            raise KeyError(
                f"{type(self).__name__}: no slot {slot_name!r} for variable '{var.name}'; "
                f"its slots are {names}, created at the first apply_gradients (build)"
            )
        return slot

    def _var_key(self, variable: Variable) -> int:
        """Keras 3's key of a variable in the optimizer's tables."""
        return id(variable)

    def _get_variable_index(self, variable: Variable) -> int:
        """The index of ``variable`` in the list the optimizer was built with (Keras 3
        optimizers index their slot lists with it)."""
        rec = self._records.get(id(variable))
        if rec is None:
            raise KeyError(f"{type(self).__name__}: variable '{variable.name}' is not one "
                           f"of the variables the optimizer was built with")
        return rec[0]

    @property
    def variables(self) -> list:
        """``iterations``, the learning-rate Variable (if any), then every slot."""
        out = [self.iterations]
        if self._lr_var is not None and self._lr_fn is None:
            out.append(self._lr_var)
        out.extend(self._slot_vars.values())
        return out

    # ---- the contract's update helpers -------------------------------------------------
    def assign(self, variable: Variable, value: TensorLike) -> None:
        """Set ``variable`` (a model or optimizer variable) to ``value`` in ``update_step``."""
        variable.assign(value)

    def assign_add(self, variable: Variable, value: TensorLike) -> None:
        """Add ``value`` to ``variable`` in ``update_step``."""
        variable.assign_add(value)

    def assign_sub(self, variable: Variable, value: TensorLike) -> None:
        """Subtract ``value`` from ``variable`` in ``update_step``."""
        variable.assign_sub(value)

    def update_step(self, gradient: Tensor, variable: Variable,
                    learning_rate: TensorLike) -> None:
        """Update ``variable`` (and its slots) from ``gradient``; subclasses define it.

        Args:
            gradient: the (clipped) gradient, a Tensor of the variable's dtype.
            variable: the variable to update, with :meth:`assign_sub` and friends.
            learning_rate: the learning-rate Variable (float32), or the schedule's value.

        Raises:
            NotImplementedError: always, in the base class.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must define update_step(gradient, variable, "
            f"learning_rate) (see the lk.optimizers.Optimizer docstring)")

    # ---- weight decay exclusion ------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list: Sequence[Variable] | None = None,
                                  var_names: Sequence[str] | None = None) -> None:
        """Skip weight decay for these variables, or those whose name contains a string.

        Raises:
            ValueError: called after the optimizer was built.
        """
        if self.built:
            raise ValueError(
                f"{type(self).__name__}: exclude_from_weight_decay() must be called before "
                f"the first apply_gradients"
            )
        self._exclude_ids = {id(v) for v in (var_list or ())}
        self._exclude_names = tuple(var_names or ())

    def _decays(self, var: Variable) -> bool:
        if not self.weight_decay:
            return False
        if id(var) in self._exclude_ids:
            return False
        return not any(s in var.name for s in self._exclude_names)

    # ---- the update -----------------------------------------------------------------------
    def apply_gradients(
            self, grads_and_vars: Iterable[tuple[TensorLike | None, Variable]]) -> Variable:
        """Apply one update from ``(gradient, variable)`` pairs; ``None`` gradients are skipped.

        Returns:
            The ``iterations`` Variable (after the increment).

        Raises:
            ValueError: every gradient is None, or a gradient's shape differs from its
                variable's.
        """
        pairs = list(grads_and_vars)
        if not pairs:
            return self.iterations
        grads = [p[0] for p in pairs]
        variables = [p[1] for p in pairs]
        self.apply(grads, variables)
        return self.iterations

    def apply(self, grads: Sequence[TensorLike | None], variables: Sequence[Variable]) -> None:
        """Like :meth:`apply_gradients` with gradients and variables as two lists."""
        variables = list(variables)
        if not variables:
            return  # nothing to train (e.g. a frozen model), as in Keras
        if not self.built:
            self.build(variables)
        if context.RECORDERS and context.tracing():
            self._apply_traced(list(grads), variables)
            return
        records = self._records
        work = []
        missing = []
        for g, var in zip(grads, variables):
            rec = records.get(id(var))
            if rec is None:
                rec = self._late(var)
            if g is None:
                missing.append(var.name)
                continue
            ga = _array(g)
            v = var._v
            if ga.shape != v.shape:
                raise ValueError(
                    f"{type(self).__name__}: gradient shape {ga.shape} does not match the "
                    f"shape {v.shape} of variable '{var.name}'"
                )
            if ga.dtype != v.dtype:
                ga = ga.astype(v.dtype)
            work.append((var, ga, rec))
        self._check_work(work, missing)
        self._apply_work(work)
        for var, _, _ in work:
            if var.constraint is not None:
                var.assign(var.constraint(var))

    def _check_work(self, work: list, missing: list) -> None:
        if not work:
            raise ValueError(
                f"{type(self).__name__}: no gradients provided for any variable "
                f"(all gradients are None for {missing})"
            )
        if missing:
            warnings.warn(f"{type(self).__name__}: gradients do not exist for variables "
                          f"{missing}; they are not updated", stacklevel=3)

    def _apply_traced(self, grads: list, variables: list) -> None:
        """Inside ``lk.function``: the update becomes one stateful graph node whose forward
        is the eager update below (kernels or ``update_step``), re-run on every call."""
        present, missing = [], []
        for g, var in zip(grads, variables):
            if id(var) not in self._records:
                self._late(var)
            if g is None:
                missing.append(var.name)
                continue
            if tuple(np.shape(g) if not isinstance(g, Tensor) else g.shape) != var.shape:
                raise ValueError(
                    f"{type(self).__name__}: gradient shape {tuple(g.shape)} does not match "
                    f"the shape {var.shape} of variable '{var.name}'"
                )
            present.append((g, var))
        self._check_work(present, missing)
        updated = [var for _, var in present]
        if KEEPERS:  # now, while the tracer sees the snapshots as reads before the update
            _keep_reads([(var, None, self._records[id(var)]) for var in updated],
                        self.iterations)
        # The node changes these variables (in place, or by replacement).
        changed = updated + [s for var in updated for s in self._records[id(var)][1]]
        python_call(lambda *grads: self._apply_arrays(grads, updated),
                    [g for g, _ in present],
                    updates=changed + self._unowned + [self.iterations],
                    name=f"{type(self).__name__} step of {len(updated)} variables")
        for var in updated:  # recorded after the update node, as ops on the new values
            if var.constraint is not None:
                var.assign(var.constraint(var))

    def _apply_arrays(self, grads: tuple, variables: list) -> None:
        """The forward of the traced update: ``grads`` are the gradient arrays."""
        records = self._records
        work = []
        for ga, var in zip(grads, variables):
            if type(ga) is not np.ndarray:
                ga = np.asarray(ga)
            dt = var._v.dtype
            work.append((var, ga if ga.dtype == dt else ga.astype(dt), records[id(var)]))
        self._apply_work(work)

    def _apply_work(self, work: list) -> None:
        """All-reduce the gradients over the ranks of an ``lk.distribute`` strategy (if
        any), then :meth:`_update_work`."""
        if self._distribute is not None:
            work = self._distribute._reduce_gradients(self, work)
        self._update_work(work)

    def _update_work(self, work: list) -> None:
        """Clip, decay and update: ``work`` holds (variable, gradient array, record)."""
        if KEEPERS:  # tapes' recorded reads keep their values (in-place updates)
            _keep_reads(work, self.iterations)
        if self.clipnorm or self.global_clipnorm or self.clipvalue:
            work = self._clip(work)
        lr = self._current_lr()
        decay = float(self.weight_decay) * lr if self.weight_decay else 0.0
        if self._fused and self.use_fused_kernel:
            self._fused_update(work, lr, decay)
        else:
            self._reference_update(work, decay)
        # A new array rather than += so that earlier .numpy() results stay as they were.
        replace_value(self.iterations, np.array(int(self.iterations._v) + 1, dtype=np.int64))

    def _fused_update(self, work: list, lr: float, decay: float) -> None:
        """The built-ins' fast path: decay and update every variable in place with the
        NumPy kernel (small variables by groups, large ones in blocks)."""
        consts = self._constants(lr, int(self.iterations._v))
        solo = work
        if self._groups:
            solo = []
            pending: dict = {}
            for item in work:
                group = item[2][3]
                if group is None:
                    solo.append(item)
                else:
                    pending.setdefault(id(group), (group, {}))[1][id(item[0])] = item
            for group, items in pending.values():
                if len(items) == len(group.vars):
                    self._update_group(group, items, consts, decay)
                else:  # some member has no gradient this step: update members one by one
                    solo.extend(items.values())
        for var, g, rec in solo:
            v = var._v
            if type(v) is not np.ndarray or not v.flags.writeable:
                # e.g. a 0-d value stored as a NumPy scalar: give the variable its own buffer.
                v = writable(var)[0]
            self._update(v, g, [s._v for s in rec[1]], decay if rec[2] else 0.0, consts)

    def _reference_update(self, work: list, decay: float) -> None:
        """Keras 3's path: decay with lk ops, then ``update_step`` per variable."""
        lr = self._lr_var if self._lr_fn is None else \
            Tensor(np.float32(self._current_lr()))
        for var, g, rec in work:
            if decay and rec[2]:
                self.assign_sub(var, var * decay)
            self.update_step(Tensor(g), var, lr)

    def _update(self, v: np.ndarray, g: np.ndarray, slots: list, wd: float, consts) -> None:
        """Decay and update one array in place (block by block when it is large)."""
        kernel = self._kernel
        n = v.size
        if n <= BLOCK:
            scratch = self._scratch_views(n, v.dtype, v.shape)
            if wd:
                np.multiply(v, wd, out=scratch[0])
                np.subtract(v, scratch[0], out=v)
            kernel(v, g, slots, scratch, consts)
            return
        # Large arrays: contiguous flat blocks keep the working set in cache.
        vf = v.reshape(-1)
        gf = g.reshape(-1)
        sf = [s.reshape(-1) for s in slots]
        full = self._scratch_views(BLOCK, v.dtype, (BLOCK,))
        for i in range(0, n, BLOCK):
            j = min(i + BLOCK, n)
            scratch = full if j - i == BLOCK else [t[:j - i] for t in full]
            vb = vf[i:j]
            if wd:
                np.multiply(vb, wd, out=scratch[0])
                np.subtract(vb, scratch[0], out=vb)
            kernel(vb, gf[i:j], [s[i:j] for s in sf], scratch, consts)

    # ---- grouped small variables ------------------------------------------------------------
    def _make_groups(self, var_list) -> None:
        """Give small variables of one dtype (and decay setting) shared flat buffers.

        Each member's ``_v`` (and its slots' ``_v``) becomes a view into the group's
        buffers, so one kernel call updates them all: a model's biases and small kernels
        cost one set of ufunc calls instead of one per variable (the per-call overhead,
        about 1 us, dominates for small arrays). A member whose ``_v`` was replaced (by
        ``assign`` or a checkpoint restore) is copied back into its place before the next
        update.
        """
        by_key: dict = {}
        for var in var_list:
            rec = self._records.get(id(var))
            v = var._v
            if rec is None or rec[3] is not None or type(v) is not np.ndarray:
                continue
            if v.size > GROUP_MAX or v.dtype.kind != "f":
                continue
            by_key.setdefault((v.dtype, rec[2]), []).append(var)
        for (_, decays), members in by_key.items():
            if len(members) < 2:
                continue
            group = _Group(members, [self._records[id(m)][1] for m in members])
            group.decays = decays
            self._groups.append(group)
            for m in members:
                self._records[id(m)][3] = group

    def _update_group(self, group: _Group, items: dict, consts, decay: float) -> None:
        grads = []
        for k, var in enumerate(group.vars):
            view = group.vviews[k]
            if var._v is not view:
                adopt(var, view)
            for slot, sview in zip(group.slots[k], group.sviews[k]):
                if slot._v is not sview:
                    adopt(slot, sview)
            grads.append(items[id(var)][1].reshape(-1))
        np.concatenate(grads, out=group.gbuf)
        self._update(group.vbuf, group.gbuf, group.sbufs, decay if group.decays else 0.0,
                     consts)

    def _scratch_views(self, n: int, dtype, shape) -> list:
        key = (dtype, shape)
        views = self._scratch.get(key)
        if views is None:
            if len(self._scratch) > 256:
                self._scratch.clear()
            views = [np.empty(shape, dtype) for _ in range(self._num_scratch)]
            self._scratch[key] = views
        return views

    def _clip(self, work: list) -> list:
        if self.clipnorm:
            c = float(self.clipnorm)
            out = []
            for var, g, rec in work:
                norm = float(np.sqrt(np.sum(np.square(g, dtype=np.float64))))
                if norm > c:
                    g = (g * c / norm).astype(g.dtype, copy=False)
                out.append((var, g, rec))
            return out
        if self.global_clipnorm:
            c = float(self.global_clipnorm)
            total = sum(float(np.sum(np.square(g, dtype=np.float64))) for _, g, _ in work)
            norm = np.sqrt(total)
            # Like Keras: a non-finite global norm turns every gradient into NaN.
            scale = c * min(1.0 / norm, 1.0 / c) if np.isfinite(norm) and norm > 0 else (
                1.0 if norm == 0 else float("nan"))
            if scale == 1.0:
                return work
            return [(var, (g * scale).astype(g.dtype, copy=False), rec) for var, g, rec in work]
        c = float(self.clipvalue)
        return [(var, np.clip(g, -c, c), rec) for var, g, rec in work]

    def _constants(self, lr: float, step: int) -> tuple:
        """Per-step scalars shared by every variable's kernel (Python floats)."""
        return (lr,)

    def _kernel(self, v, g, slots, scratch, consts) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _kernel")

    def minimize(self, loss: Callable[[], TensorLike], var_list: Sequence[Variable],
                 tape: object = None) -> Variable:
        """Differentiate ``loss`` (a zero-argument callable) and apply one update.

        Args:
            loss: a callable returning the scalar loss, computed under a new tape.
            var_list: the variables to update.
            tape: unused (accepted for compatibility).
        """
        from layerkit.autodiff.tape import GradientTape

        var_list = list(var_list)
        with GradientTape() as t:
            value = loss()
        grads = t.gradient(value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    # ---- checkpoints and configs ------------------------------------------------------------
    def _checkpoint_variables(self) -> dict:
        out = {"iterations": self.iterations}
        if self._lr_var is not None and self._lr_fn is None:
            out["learning_rate"] = self._lr_var
        out.update(self._slot_vars)
        return out

    def get_config(self) -> dict:
        """The constructor arguments (a schedule is serialized as a dict)."""
        fn = self._lr_fn
        if fn is None:
            lr = float(self._lr_var._v)
        elif isinstance(fn, _schedules.LearningRateSchedule):
            lr = _schedules.serialize(fn)
        else:
            lr = fn
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
                "clipvalue": self.clipvalue}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Optimizer:
        """Create an optimizer from :meth:`get_config` output (no state)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = _schedules.deserialize(config["learning_rate"],
                                                             custom_objects)
        return cls(**init_kwargs(cls, config))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} iterations={int(self.iterations._v)}>"
