"""The run-time half of AutoGraph: what converted code calls (as ``ag__.<name>``).

Each statement the converter rewrites (see :mod:`.transformer`) becomes a call here that
decides *at run time*: a Python value (or an eager tensor) keeps Python semantics, so
converted code behaves exactly like the original outside a trace; a tensor traced by
``lk.function`` turns the statement into a graph node (``lk.cond`` / ``lk.while_loop``
sub-graphs, see ``layerkit.autodiff.function.subgraph``).

State passes explicitly: the converter turns a statement's body into a function that
takes the variables the statement assigns and returns their new values, so both
branches of an ``if`` (or a loop's body) can be traced into sub-graphs.
"""
from __future__ import annotations

import builtins
import sys

import numpy as np

from layerkit._core.tensor import Tensor
from layerkit._core.variable import Variable
from layerkit.autodiff.function import subgraph as _sub
from layerkit.autodiff.function import trace as _trace


def _where() -> str:
    f = _trace.user_frame(sys._getframe(2))
    return f" (at {_trace.where(f)})" if f is not None else ""


# ---- undefined variables -------------------------------------------------------------------
class Undefined:
    """The value of a variable not defined (yet) on some path of converted code.

    Using it raises the error it carries (a variable assigned in only one branch of an
    ``if`` on a tensor, or only inside a loop on a tensor, then read after it)."""

    __slots__ = ("name", "message")

    def __init__(self, name: str, message: str | None = None) -> None:
        self.name = name
        self.message = message

    def error(self) -> Exception:
        if self.message:
            return UnboundLocalError(self.message)
        return UnboundLocalError(f"local variable '{self.name}' referenced before "
                                 f"assignment")

    def _fail(self, *args, **kwargs):
        raise self.error()

    def __getattr__(self, attr):
        raise self.error()

    def __repr__(self) -> str:
        return f"<undefined '{self.name}'>"


for _m in ("__bool__", "__call__", "__iter__", "__len__", "__getitem__", "__setitem__",
           "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
           "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
           "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
           "__pos__", "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__float__",
           "__int__", "__index__", "__array__", "__and__", "__or__", "__invert__",
           "__contains__"):
    setattr(Undefined, _m, Undefined._fail)


def is_undefined(x) -> bool:
    return type(x) is Undefined


def retval(value):
    """The converted function's result: its return value, or None if none was set."""
    if type(value) is Undefined:
        if value.message:
            raise value.error()
        return None
    return value


# ---- helpers --------------------------------------------------------------------------------
def _traced(x) -> bool:
    return isinstance(x, _trace.TracedTensor)


def _tensor_like(x) -> bool:
    return isinstance(x, (Tensor, np.ndarray, np.generic, bool, int, float, complex))


def _to_tensor(x, like=None):
    import layerkit as lk

    if isinstance(x, Tensor) and not isinstance(x, Variable):
        return x
    if isinstance(x, Variable):
        return x.value()
    if like is not None and isinstance(x, (bool, int, float, complex)):
        return lk.convert_to_tensor(np.asarray(x, dtype=np.dtype(like)))
    return lk.convert_to_tensor(x)


def _dtype_of(x):
    if isinstance(x, Tensor):
        return x.dtype
    return None


def _is_ta(x) -> bool:
    from layerkit.control_flow import TensorArray

    return isinstance(x, TensorArray)


def _zeros_as(x):
    import layerkit as lk

    if not _tensor_like(x):
        raise ValueError(f"lk.function: a return inside an `if` or loop on a tensor must "
                         f"return tensors; received {type(x).__name__}")
    t = _to_tensor(x)
    return lk.zeros(tuple(t.shape), t.dtype.name)


def _bool_tensor(x):
    import layerkit as lk

    x = _to_tensor(x)
    return x if x.dtype == np.bool_ else lk.cast(x, "bool")


# ---- logical operators -------------------------------------------------------------------
def and_(a, b):
    """``a() and b()``: lazy in Python, ``lk.logical_and`` on a traced tensor."""
    x = a()
    if _traced(x):
        return _sub_logical("logical_and", x, b)
    return x and b()


def or_(a, b):
    """``a() or b()``: lazy in Python, ``lk.logical_or`` on a traced tensor."""
    x = a()
    if _traced(x):
        return _sub_logical("logical_or", x, b)
    return x or b()


def _sub_logical(name: str, x, b):
    import layerkit as lk

    y = b()
    return getattr(lk, name)(_bool_tensor(x), _bool_tensor(y))


def not_(x):
    """``not x``; ``lk.logical_not`` on a traced tensor."""
    if _traced(x):
        import layerkit as lk

        return lk.logical_not(_bool_tensor(x))
    return not x


# ---- if ---------------------------------------------------------------------------------------
def if_stmt(test, body, orelse, state: tuple, names: tuple) -> tuple:
    """An ``if`` statement: ``body(*state)`` or ``orelse(*state)`` return the new state."""
    if not _traced(test):
        return body(*state) if test else orelse(*state)
    where = _where()
    pred = _bool_tensor(test)
    plan: dict = {}

    def finish(rt, rf):
        rt, rf = list(rt), list(rf)
        flat_t, flat_f, slots = [], [], []
        for name, a, b in zip(names, rt, rf):
            if name == "__lk_retval" and is_undefined(a) != is_undefined(b):
                # The return value of the path that does not return yet: never read
                # (the function returns only once __lk_do_return is true), so any value
                # of the right type stands for it.
                a, b = (_zeros_as(b), b) if is_undefined(a) else (a, _zeros_as(a))
            if a is b:
                slots.append(("same", a))
            elif is_undefined(a) or is_undefined(b):
                missing = "true" if is_undefined(a) else "else"
                msg = (f"'{name}' must also be defined in the {missing} branch of the "
                       f"`if` on a tensor{where}: it has a value after the `if` only when "
                       f"the other branch runs, which is decided when the graph runs; "
                       f"give it a value before the `if` or in both branches")
                slots.append(("undef", Undefined(name, msg)))
            elif _is_ta(a) and _is_ta(b):
                flat_t.append(a._buffer())
                flat_f.append(b._buffer())
                slots.append(("array", a))
            elif _tensor_like(a) and _tensor_like(b):
                ta = _to_tensor(a, _dtype_of(b))
                tb = _to_tensor(b, _dtype_of(ta))
                ta = _to_tensor(a, _dtype_of(tb))
                flat_t.append(ta)
                flat_f.append(tb)
                slots.append(("tensor", name))
            else:
                try:
                    same = bool(a == b)
                except Exception:  # noqa: BLE001 - incomparable values differ
                    same = False
                if not same:
                    raise ValueError(
                        f"'{name}' is a Python value ({type(a).__name__} / "
                        f"{type(b).__name__}) that differs between the branches of an "
                        f"`if` on a tensor{where}; inside lk.function only tensors can "
                        f"depend on traced data (use tensors, or decide in Python)")
                slots.append(("same", a))
        plan["slots"] = slots
        return flat_t, flat_f

    grows: set = set()
    out_names: list = []

    def finish_grows(rt, rf):
        ft, ff = finish(rt, rf)
        carried = [(n, kind) for n, (kind, _) in zip(names, plan["slots"])
                   if kind in ("tensor", "array")]
        out_names.extend(n for n, _ in carried)
        grows.update(j for j, (_, kind) in enumerate(carried) if kind == "array")
        return ft, ff

    outs = _sub.graph_cond(pred, lambda: body(*state), lambda: orelse(*state),
                           names=out_names, where=where, finish=finish_grows, grows=grows)
    it = iter(outs)
    return tuple(next(it) if kind == "tensor" else v._with_buffer(next(it)) if kind == "array"
                 else v for kind, v in plan["slots"])


# ---- while ------------------------------------------------------------------------------------
def while_stmt(test, body, state: tuple, names: tuple) -> tuple:
    """A ``while`` statement: ``test(*state)`` decides, ``body(*state)`` returns the new
    state. A test that is a traced tensor makes the rest of the loop a graph loop."""
    state = tuple(state)
    while True:
        t = test(*state)
        if _traced(t):
            return _graph_loop(lambda s: test(*s), lambda s: body(*s), state, names,
                               _where())
        if not t:
            return state
        state = tuple(body(*state))


def _graph_loop(test, body, state: tuple, names: tuple, where: str, each=None) -> tuple:
    """``while test(state): state = body(state)`` as one graph ``while`` node, or with
    ``each`` (an iterable): ``for item in each: state = body(state, item)`` as one
    ``for_each`` node."""
    state = tuple(state)
    probe = None
    if any(isinstance(v, (bool, int, float, complex)) or (
            _is_ta(v) and v._buf is None and v._element_shape is None) for v in state) or (
            "__lk_retval" in names and is_undefined(state[names.index("__lk_retval")])):
        # Learn the body's result types first (a dry run): variables that start undefined
        # get a start value of that type, Python numbers take the dtype the loop gives.
        # Tensors enter the dry run as its parameters (traced, as in the loop itself).
        ks = [k for k, v in enumerate(state) if _tensor_like(v)]
        probe_in = [_to_tensor(state[k]) for k in ks]

        def with_params(xs):
            s = list(state)
            for k, x in zip(ks, xs):
                s[k] = x
            return tuple(s)

        if each is None:
            _, _, probe = _sub.trace_sub(lambda *xs: body(with_params(xs)),
                                         probe_in, "while_probe", dry=True)
        else:
            first = _sub._next(iter(each))
            if first is _sub._END:
                return tuple(state)
            _, _, probe = _sub.trace_sub(lambda *xs: body(with_params(xs), first),
                                         probe_in, "for_probe", dry=True)
        probe = list(probe)
    carried = []   # indices of state that are loop variables
    init = []
    for k, v in enumerate(state):
        after = probe[k] if probe is not None else None
        if is_undefined(v):
            # As TensorFlow: only the return value is given a start value; other names
            # first assigned inside the loop are the body's own (undefined after it).
            if names[k] == "__lk_retval" and isinstance(after, Tensor):
                import layerkit as lk

                carried.append(k)
                init.append(lk.zeros(tuple(after.shape), after.dtype.name))
            continue
        if _is_ta(v):
            shape = getattr(after, "_element_shape", None) if _is_ta(after) else None
            if v._buf is None and v._element_shape is None and shape is not None:
                v._element_shape = shape
            carried.append(k)
            init.append(v._buffer())
            continue
        if _tensor_like(v):
            like = _dtype_of(after) if isinstance(v, (bool, int, float, complex)) else None
            if like is not None and isinstance(v, bool) != (like == np.bool_):
                like = None
            carried.append(k)
            init.append(_to_tensor(v, like))
    fixed = {k: v for k, v in enumerate(state) if k not in carried}

    arrays = {k for k in carried if _is_ta(state[k])}

    def rebuild(xs):
        s = dict(fixed)
        s.update((k, state[k]._with_buffer(x) if k in arrays else x)
                 for k, x in zip(carried, xs))
        return tuple(s[k] for k in range(len(state)))

    def c(*xs):
        return _bool_tensor(test(rebuild(xs)))

    def b(*xs, item=None):
        new = tuple(body(rebuild(xs)) if each is None else body(rebuild(xs), item))
        out = []
        for k in range(len(state)):
            if k in fixed:
                if new[k] is not fixed[k] and not is_undefined(fixed[k]):
                    raise ValueError(
                        f"'{names[k]}' is a Python value ({type(fixed[k]).__name__}) that "
                        f"a loop on a tensor changes{where}; inside lk.function a loop "
                        f"whose condition depends on traced data can only carry tensors")
        for k, x in zip(carried, xs):
            v = new[k]
            if is_undefined(v):
                raise UnboundLocalError(f"'{names[k]}' is undefined at the end of an "
                                        f"iteration of the loop{where}")
            out.append(v._buffer() if k in arrays else _to_tensor(v, x.dtype))
        return out

    loop_names = [names[k] for k in carried]
    grows = {j for j, k in enumerate(carried) if k in arrays}
    if each is None:
        outs = _sub.graph_while(c, b, init, names=loop_names, where=where, grows=grows)
    else:
        outs = _sub.graph_for_each(each, lambda item, *xs: b(*xs, item=item), init,
                                   names=loop_names, where=where, grows=grows)
    result = dict(fixed)
    for k, v in fixed.items():
        if is_undefined(v):
            result[k] = Undefined(names[k], (
                f"'{names[k]}' is assigned only inside the loop on a tensor{where}; give it "
                f"a value before the loop to use it after the loop"))
    result.update((k, state[k]._with_buffer(x) if k in arrays else x)
                  for k, x in zip(carried, outs))
    return tuple(result[k] for k in range(len(state)))


# ---- for --------------------------------------------------------------------------------------
class _Range:
    """``range``/``lk.range`` with traced bounds, iterated by a graph loop."""

    def __init__(self, start, limit, delta) -> None:
        self.start, self.limit, self.delta = start, limit, delta


def _is_dataset(x) -> bool:
    return type(x).__module__.startswith("layerkit.data") and hasattr(x, "element_spec")


def for_stmt(iterable, extra_test, body, state: tuple, names: tuple) -> tuple:
    """A ``for`` statement: ``body(item, *state)`` returns the new state; ``extra_test``
    (or None) is the converted ``break``/``return`` condition checked before each item."""
    state = tuple(state)
    if isinstance(iterable, _Range):
        return _for_range(iterable, extra_test, body, state, names, _where())
    if _traced(iterable):
        return _for_tensor(iterable, extra_test, body, state, names, _where())
    if _is_dataset(iterable) and _sub.active_tracer() is not None:
        return _for_dataset(iterable, extra_test, body, state, names, _where())
    for item in iterable:
        if extra_test is not None:
            t = extra_test(*state)
            if _traced(t):  # a break/return decided by traced data: guard the rest
                state = if_stmt(t, lambda *s, item=item: body(item, *s),
                                lambda *s: s, state, names)
                continue
            if not t:
                break
        state = tuple(body(item, *state))
    return state


def _loop_test(extra_test, more):
    def test(s):
        go = more(s)
        if extra_test is None:
            return go
        import layerkit as lk

        return lk.logical_and(_bool_tensor(go), _bool_tensor(extra_test(*s[1:])))
    return test


def _for_range(r: _Range, extra_test, body, state, names, where) -> tuple:
    import layerkit as lk

    start = _to_tensor(r.start)
    limit = lk.cast(_to_tensor(r.limit), start.dtype.name)
    delta = lk.cast(_to_tensor(r.delta), start.dtype.name)

    def more(s):
        i = s[0]
        return lk.where(delta > 0, i < limit, i > limit)

    def step(s):
        return (s[0] + delta,) + tuple(body(s[0], *s[1:]))

    out = _graph_loop(_loop_test(extra_test, more), step, (start,) + state,
                      ("<range index>",) + tuple(names), where)
    return out[1:]


def _for_tensor(t, extra_test, body, state, names, where) -> tuple:
    import layerkit as lk

    if len(t.shape) == 0:
        raise TypeError(f"cannot iterate over a scalar tensor{where}")
    # A None dimension of an input_signature has no static size: take it at run time.
    n = lk.shape(t, out_type="int32")[0] if t.shape[0] is None else int(t.shape[0])

    def more(s):
        return s[0] < n

    def step(s):
        return (s[0] + 1,) + tuple(body(lk.gather(t, s[0]), *s[1:]))

    out = _graph_loop(_loop_test(extra_test, more), step, (lk.constant(0, "int32"),) + state,
                      ("<iteration index>",) + tuple(names), where)
    return out[1:]


def _for_dataset(ds, extra_test, body, state, names, where) -> tuple:
    if extra_test is not None:
        raise NotImplementedError(f"`break` or `return` inside a loop over a dataset in "
                                  f"lk.function is not supported{where}; loop over "
                                  f"ds.take(n) or move the loop out of the function")
    return _graph_loop(None, lambda s, item: body(item, *s), state, names, where, each=ds)


# ---- builtins ---------------------------------------------------------------------------------
def range_(*args):
    """``range``: a graph-loop range when a bound is a traced tensor."""
    if any(_traced(a) for a in args):
        return _range_spec(*args)
    return builtins.range(*args)


def _range_spec(*args):
    if len(args) == 1:
        return _Range(0, args[0], 1)
    if len(args) == 2:
        return _Range(args[0], args[1], 1)
    return _Range(*args)


def loop_iter(f, *args, **kwargs):
    """The iterable of a ``for`` statement that is a call: ``range``/``lk.range`` with a
    traced bound iterate by a graph counter instead of materializing the range."""
    import layerkit as lk

    if (f is builtins.range or f is getattr(lk, "range", None)) and not kwargs:
        if any(_traced(a) for a in args):
            return _range_spec(*args)
        if all(isinstance(a, (int, np.integer)) for a in args):
            # Known bounds: a Python loop (unrolled while tracing), so the index is a
            # Python int that TensorArray.write and indexing accept.
            return builtins.range(*[int(a) for a in args])
    return converted_call(f, *args, **kwargs)


def ret(value):
    """A ``return`` value of converted code: an undefined variable in it is an error."""
    items = value if isinstance(value, (tuple, list)) else (
        value.values() if isinstance(value, dict) else (value,))
    for v in items:
        if type(v) is Undefined:
            raise v.error()
    return value


def converted_call(f, *args, **kwargs):
    """Call ``f``, converting it first if it is a user function (see ``convert``)."""
    if f is builtins.range:
        return range_(*args, **kwargs)
    from layerkit.autograph.transformer import convert_callable

    g = convert_callable(f)
    return g(*args, **kwargs)
