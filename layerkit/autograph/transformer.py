"""The source-level half of AutoGraph: a user function's AST rewritten so that its
``if``, ``while`` and ``for`` statements call :mod:`.operators` (which decide at run time
between Python and graph control flow).

The rewrite, per function (nested ``def`` s included), in this order:

1. ``return`` inside ``if``/``while``/``for``: becomes ``__lk_do_return = True;
   __lk_retval = value``; statements after one that may return are guarded by
   ``if not __lk_do_return``, loops also stop on it, and the function ends with
   ``return ag__.retval(__lk_retval)``;
2. ``break``/``continue``: a flag per loop, the rest of the body guarded by it, the
   loop's test extended by ``not break_flag`` (a loop's ``else`` runs if it is false);
3. ``and``/``or``/``not``: ``ag__.and_(lambda: a, lambda: b)`` etc. (lazy, as Python);
4. each ``if``/``while``/``for`` (innermost first): its body becomes a local function
   taking and returning the variables the statement assigns, and the statement a call
   ``ag__.if_stmt`` / ``while_stmt`` / ``for_stmt``; calls become
   ``ag__.converted_call(f, ...)`` so user functions they reach are converted too.

Line numbers are kept: the converted code is compiled under the original file name
with the original lines, so tracebacks and errors name the user's own source lines.
"""
from __future__ import annotations

import ast
import inspect
import os
import textwrap
import threading
import types
import warnings

_DO_RETURN = "__lk_do_return"
_RETVAL = "__lk_retval"
_GENERATED = ("__lk_if_", "__lk_while_", "__lk_for_", "__lk_item_")
_FRAME_BUILTINS = {"super", "locals", "globals", "vars", "eval", "exec", "dir", "print"}

_CACHE: dict = {}
_LOCK = threading.RLock()
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIB_DIRS = tuple({os.path.dirname(os.__file__), os.path.dirname(ast.__file__)})


class ConversionError(ValueError):
    """A function could not be converted by AutoGraph."""


class AutoGraphWarning(UserWarning):
    """A function could not be converted and is traced as written."""


# ---- small AST builders ---------------------------------------------------------------------
def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name("ag__"), attr=attr, ctx=ast.Load())


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(target, True)], value=value)


def _const(v) -> ast.Constant:
    return ast.Constant(value=v)


def _not(expr: ast.expr) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=expr)


def _tuple(names, store: bool = False) -> ast.Tuple:
    return ast.Tuple(elts=[_name(n, store) for n in names],
                     ctx=ast.Store() if store else ast.Load())


def _located(nodes: list, src: ast.AST) -> list:
    for n in nodes:
        ast.copy_location(n, src)
        for sub in ast.walk(n):
            if not hasattr(sub, "lineno") and isinstance(sub, (ast.stmt, ast.expr)):
                ast.copy_location(sub, src)
    return nodes


# ---- analysis -------------------------------------------------------------------------------
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(nodes):
    """Nodes under ``nodes`` without entering nested scopes (defs, lambdas, classes,
    comprehensions); the scope nodes themselves are yielded."""
    stack = list(nodes)[::-1]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue
        stack.extend(list(ast.iter_child_nodes(n))[::-1])


def assigned_names(stmts) -> list:
    """Names a statement list binds in its own scope, in first-binding order."""
    out: dict = {}
    for n in _walk_scope(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out[n.id] = None
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[n.name] = None
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out[(a.asname or a.name).split(".")[0]] = None
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out[n.name] = None
    return list(out)


def _contains(stmts, kinds, into_loops: bool) -> bool:
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, _SCOPES):
            continue
        if not into_loops and isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
            # only the loop's else block belongs to the enclosing loop
            stack.extend(n.orelse)
            continue
        stack.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, ast.stmt))
    return False


# ---- 1/2: return, break, continue ------------------------------------------------------------
def _lower_block(stmts: list, kind, replace, flag: str, into_loops: bool) -> list:
    """Replace ``kind`` statements by ``replace(stmt)`` and guard what follows a
    statement that may execute one by ``if not flag:``."""
    out: list = []
    for i, s in enumerate(stmts):
        if isinstance(s, kind):
            out.extend(_located(replace(s), s))
            return out   # the rest of the block is unreachable
        may_exit = _contains([s], kind, into_loops)
        _lower_inside(s, kind, replace, flag, into_loops)
        out.append(s)
        if may_exit:
            rest = _lower_block(stmts[i + 1:], kind, replace, flag, into_loops)
            if rest:
                guard = ast.If(test=_not(_name(flag)), body=rest, orelse=[])
                out.extend(_located([guard], stmts[i + 1]))
            return out
    return out


def _lower_inside(s, kind, replace, flag: str, into_loops: bool) -> None:
    if isinstance(s, _SCOPES):
        return
    if isinstance(s, (ast.For, ast.While)):
        if into_loops:
            if _contains(s.body, kind, True):
                s.body = _lower_block(s.body, kind, replace, flag, True)
                _stop_on(s, flag)
            s.orelse = _lower_block(s.orelse, kind, replace, flag, True)
        else:
            s.orelse = _lower_block(s.orelse, kind, replace, flag, False)
        return
    for field in ("body", "orelse", "finalbody"):
        block = getattr(s, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            setattr(s, field, _lower_block(block, kind, replace, flag, into_loops))
    for h in getattr(s, "handlers", ()) or ():
        h.body = _lower_block(h.body, kind, replace, flag, into_loops)


def _stop_on(loop, flag: str) -> None:
    extra = getattr(loop, "_lk_stop", None)
    if extra is None:
        extra = loop._lk_stop = []
    if flag not in extra:
        extra.append(flag)


def lower_returns(fdef) -> None:
    body = fdef.body
    nested = any(_contains([s], ast.Return, True) for s in body
                 if isinstance(s, (ast.If, ast.For, ast.While, ast.With, ast.Try)))
    if not nested:
        return

    def replace(s):
        value = s.value if s.value is not None else _const(None)
        return [_assign(_DO_RETURN, _const(True)), _assign(_RETVAL, value)]

    first = body[0]
    doc = []
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
            isinstance(first.value.value, str):
        doc, body = [first], body[1:]
    init = [_assign(_DO_RETURN, _const(False)),
            _assign(_RETVAL, ast.Call(func=_ag("Undefined"), args=[_const(_RETVAL)],
                                      keywords=[]))]
    new = _lower_block(body, ast.Return, replace, _DO_RETURN, True)
    end = ast.Return(value=ast.Call(func=_ag("retval"), args=[_name(_RETVAL)], keywords=[]))
    fdef.body = doc + _located(init, body[0] if body else fdef) + new + \
        _located([end], body[-1] if body else fdef)


class _LoopExits(ast.NodeTransformer):
    """``break``/``continue`` as flags, innermost loops first."""

    def __init__(self) -> None:
        self.count = 0

    def visit_FunctionDef(self, node):
        return node   # nested functions are converted on their own

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def _loop(self, node):
        self.generic_visit(node)
        out = []
        if _contains(node.body, ast.Continue, False):
            self.count += 1
            flag = f"__lk_continue_{self.count}"
            node.body = [_assign(flag, _const(False))] + _lower_block(
                node.body, ast.Continue, lambda s: [_assign(flag, _const(True))], flag, False)
            _located(node.body[:1], node)
        if _contains(node.body, ast.Break, False):
            self.count += 1
            flag = f"__lk_break_{self.count}"
            node.body = _lower_block(node.body, ast.Break,
                                     lambda s: [_assign(flag, _const(True))], flag, False)
            _stop_on(node, flag)
            out = _located([_assign(flag, _const(False))], node)
            if node.orelse:
                guard = ast.If(test=_not(_name(flag)), body=node.orelse, orelse=[])
                node.orelse = []
                return out + [node] + _located([guard], node)
        return out + [node] if out else node

    visit_For = _loop
    visit_While = _loop


# ---- 3/4: logical operators, calls and control flow -------------------------------------------
class _ControlFlow(ast.NodeTransformer):
    def __init__(self, declared: dict) -> None:
        self.count = 0
        self.declared = declared   # name -> "global" | "nonlocal"

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    # logical operators
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        expr = node.values[-1]
        for v in reversed(node.values[:-1]):
            expr = ast.Call(func=_ag(fn), args=[_lazy(v), _lazy(expr)], keywords=[])
        return ast.copy_location(expr, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(
                ast.Call(func=_ag("not_"), args=[node.operand], keywords=[]), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in _FRAME_BUILTINS:
            return node
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id == "ag__":
            return node
        return ast.copy_location(
            ast.Call(func=_ag("converted_call"), args=[f] + node.args,
                     keywords=node.keywords), node)

    def visit_Return(self, node):
        self.generic_visit(node)
        v = node.value
        if v is None or (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                         and isinstance(v.func.value, ast.Name) and v.func.value.id == "ag__"
                         and v.func.attr == "retval"):
            return node
        node.value = ast.copy_location(ast.Call(func=_ag("ret"), args=[v], keywords=[]), v)
        return node

    # statements
    def _defs(self, prefix: str, params: list, body: list, ret: list, src) -> ast.FunctionDef:
        decl: list = []
        g = [n for n in assigned_names(body) if self.declared.get(n) == "global"]
        nl = [n for n in assigned_names(body) if self.declared.get(n) == "nonlocal"]
        if g:
            decl.append(ast.Global(names=g))
        if nl:
            decl.append(ast.Nonlocal(names=nl))
        body = decl + (body or [ast.Pass()]) + [ast.Return(value=_tuple(ret))]
        return _located([_funcdef(prefix, params, body)], src)[0]

    def _state(self, names: list) -> list:
        return [n for n in names if n not in self.declared
                and not n.startswith(_GENERATED)]

    def _undefined_guards(self, names: list, src) -> list:
        out = []
        for n in names:
            handler = ast.ExceptHandler(type=_name("NameError"), name=None, body=[
                _assign(n, ast.Call(func=_ag("Undefined"), args=[_const(n)], keywords=[]))])
            guard = ast.Try(body=[ast.Expr(value=_name(n))], handlers=[handler],
                            orelse=[], finalbody=[])
            guard._lk_guard = n   # type: ignore[attr-defined]
            out.append(guard)
        return _located(out, src)

    def _result(self, names: list, call: ast.expr, src) -> list:
        if names:
            return _located([ast.Assign(targets=[_tuple(names, True)], value=call)], src)
        return _located([ast.Expr(value=call)], src)

    def visit_If(self, node):
        self.generic_visit(node)
        if _escapes(node.body + node.orelse, True):
            return node   # a jump the lowering did not reach (e.g. in a `match`): as written
        self.count += 1
        k = self.count
        names = self._state(assigned_names(node.body + node.orelse))
        t = self._defs(f"__lk_if_true_{k}", names, node.body, names, node)
        f = self._defs(f"__lk_if_false_{k}", names, node.orelse, names, node)
        call = ast.Call(func=_ag("if_stmt"), args=[
            node.test, _name(t.name), _name(f.name), _tuple(names),
            ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())], keywords=[])
        return self._undefined_guards(names, node) + [t, f] + self._result(names, call, node)

    def _stop_test(self, node) -> ast.expr | None:
        flags = getattr(node, "_lk_stop", None)
        if not flags:
            return None
        expr = None
        for fl in flags:
            term = ast.Call(func=_ag("not_"), args=[_name(fl)], keywords=[])
            expr = term if expr is None else ast.Call(
                func=_ag("and_"), args=[_lazy(expr), _lazy(term)], keywords=[])
        return expr

    def visit_While(self, node):
        self.generic_visit(node)
        if _escapes(node.body, False):
            return node
        self.count += 1
        k = self.count
        names = self._state(assigned_names(node.body))
        test = node.test
        stop = self._stop_test(node)
        if stop is not None:
            test = ast.Call(func=_ag("and_"), args=[_lazy(stop), _lazy(test)], keywords=[])
        tf = _funcdef(f"__lk_while_test_{k}", names, [ast.Return(value=test)])
        _located([tf], node)
        bf = self._defs(f"__lk_while_body_{k}", names, node.body, names, node)
        call = ast.Call(func=_ag("while_stmt"), args=[
            _name(tf.name), _name(bf.name), _tuple(names),
            ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())], keywords=[])
        return (self._undefined_guards(names, node) + [tf, bf]
                + self._result(names, call, node) + node.orelse)

    def visit_For(self, node):
        self.generic_visit(node)
        if _escapes(node.body, False):
            return node
        self.count += 1
        k = self.count
        names = self._state(assigned_names([ast.Assign(targets=[node.target],
                                                       value=_const(None))] + node.body))
        item = f"__lk_item_{k}"
        body = _located([ast.Assign(targets=[node.target], value=_name(item))], node) \
            + node.body
        bf = self._defs(f"__lk_for_body_{k}", [item] + names, body, names, node)
        stop = self._stop_test(node)
        defs = [bf]
        if stop is not None:
            tf = _funcdef(f"__lk_for_test_{k}", names, [ast.Return(value=stop)])
            defs.insert(0, _located([tf], node)[0])
            extra = _name(tf.name)
        else:
            extra = _const(None)
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
                isinstance(it.func.value, ast.Name) and it.func.value.id == "ag__" and \
                it.func.attr == "converted_call":
            it = ast.Call(func=_ag("loop_iter"), args=it.args, keywords=it.keywords)
        call = ast.Call(func=_ag("for_stmt"), args=[
            it, extra, _name(bf.name), _tuple(names),
            ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())], keywords=[])
        return (self._undefined_guards(names, node) + defs
                + self._result(names, call, node) + node.orelse)


def _funcdef(name: str, params: list, body: list) -> ast.FunctionDef:
    fn = ast.FunctionDef(name=name, args=_args(params), body=body, decorator_list=[],
                         returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:   # Python 3.12+
        setattr(fn, "type_params", [])  # noqa: B010
    return fn


def _escapes(stmts: list, loops_too: bool) -> bool:
    """Whether ``stmts`` still hold a ``return``/``yield`` (or, with ``loops_too``, a
    ``break``/``continue`` of an enclosing loop): moved into a function they would change
    meaning, so the statement is left as written."""
    for n in _walk_scope(stmts):
        if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if loops_too and isinstance(n, (ast.Break, ast.Continue)) and not _in_loop(stmts, n):
            return True
    return False


def _in_loop(stmts: list, target) -> bool:
    """Whether ``target`` (a break/continue under ``stmts``) belongs to a loop that is
    itself under ``stmts``."""
    for n in _walk_scope(stmts):
        if isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
            if any(m is target for m in _walk_scope(n.body)):
                return True
    return False


def _lazy(expr: ast.expr) -> ast.Lambda:
    lam = ast.Lambda(args=_args([]), body=expr)
    return ast.copy_location(lam, expr)


def _args(names: list) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _convert_def(fdef) -> None:
    """Rewrite one function definition in place (nested definitions first)."""
    for n in list(_walk_scope(fdef.body)):
        if isinstance(n, ast.FunctionDef):
            _convert_def(n)
    declared: dict = {}
    for n in _walk_scope(fdef.body):
        if isinstance(n, ast.Global):
            declared.update(dict.fromkeys(n.names, "global"))
        elif isinstance(n, ast.Nonlocal):
            declared.update(dict.fromkeys(n.names, "nonlocal"))
    lower_returns(fdef)
    exits = _LoopExits()
    fdef.body = _flat(exits.visit(s) for s in fdef.body)
    cf = _ControlFlow(declared)
    fdef.body = _flat(cf.visit(s) for s in fdef.body)
    _prune_guards(fdef)


def _params(fdef) -> set:
    a = fdef.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    return names


def _binds(s) -> set:
    """Names a (converted) statement surely binds when it completes normally."""
    if isinstance(s, ast.Try):
        return {s._lk_guard} if hasattr(s, "_lk_guard") else set()
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {s.name}
    if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Import,
                      ast.ImportFrom, ast.With)):
        if isinstance(s, ast.AnnAssign) and s.value is None:
            return set()
        return set(assigned_names([s]))
    return set()


def _prune_guards(fdef, bound: set | None = None) -> None:
    """Drop the undefined-name guards of names surely bound before them (each function
    scope on its own: its parameters, then what its earlier statements bind)."""
    bound = set(_params(fdef)) if bound is None else bound
    body = []
    for s in fdef.body:
        if hasattr(s, "_lk_guard") and s._lk_guard in bound:
            continue
        body.append(s)
        if isinstance(s, ast.FunctionDef):
            _prune_guards(s)
        bound |= _binds(s)
    fdef.body = body or [ast.Pass()]


def _flat(items) -> list:
    out: list = []
    for x in items:
        if isinstance(x, list):
            out.extend(x)
        elif x is not None:
            out.append(x)
    return out


# ---- converting functions ---------------------------------------------------------------------
def _is_library(f) -> bool:
    code = getattr(f, "__code__", None)
    if code is None:
        return True
    fn = os.path.abspath(code.co_filename)
    if fn.startswith(_PKG + os.sep) or "site-packages" in fn or "dist-packages" in fn:
        return True
    if code.co_filename.startswith("<"):
        # Code compiled from a string (notebook cells, exec): user code when linecache
        # holds its source, as Jupyter and cell runners register it; otherwise it has no
        # source to convert.
        import linecache

        return not linecache.getlines(code.co_filename)
    return any(fn.startswith(d + os.sep) for d in _LIB_DIRS)


def _source_tree(f):
    try:
        src = inspect.getsource(f)
    except (OSError, TypeError):
        return None
    src = textwrap.dedent(src)
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or \
            tree.body[0].name != f.__name__:
        return None
    return tree


def _build(f):
    """The converted code object for ``f.__code__`` and the module source (or None)."""
    code = f.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                        inspect.CO_ASYNC_GENERATOR):
        return None
    if f.__name__ == "<lambda>":
        return None
    tree = _source_tree(f)
    if tree is None:
        return None
    fdef = tree.body[0]
    fdef.decorator_list = []
    _explicit_super(fdef, code)
    _convert_def(fdef)
    free = list(code.co_freevars)
    factory = _funcdef("__lk_ag_factory", ["ag__"] + [n for n in free if n != "ag__"],
                       [fdef, ast.Return(value=_name(fdef.name))])
    _located([factory], fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, code.co_firstlineno - 1)
    source = ast.unparse(fdef)
    ns: dict = {}
    exec(compile(module, code.co_filename, "exec"), ns)  # noqa: S102
    from layerkit.autograph import operators

    inner = ns["__lk_ag_factory"](operators, *([None] * len([n for n in free
                                                              if n != "ag__"])))
    return inner, source


def _explicit_super(fdef, code) -> None:
    """``super()`` as ``super(__class__, self)``: converted code moves statements into
    nested functions, where the zero-argument form would take their first argument."""
    params = fdef.args.posonlyargs + fdef.args.args
    if "__class__" not in code.co_freevars or not params:
        return
    first = params[0].arg
    for n in ast.walk(fdef):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super" \
                and not n.args and not n.keywords:
            n.args = [_name("__class__"), _name(first)]


def _rebind(f, inner):
    cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))
    own = dict(zip(inner.__code__.co_freevars, inner.__closure__ or ()))
    closure = []
    for n in inner.__code__.co_freevars:
        if n == "ag__":
            closure.append(own[n])
        elif n in cells:
            closure.append(cells[n])
        else:
            return None
    g = types.FunctionType(inner.__code__, f.__globals__, f.__name__, f.__defaults__,
                           tuple(closure) or None)
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = f.__qualname__
    g.__module__ = f.__module__
    g.__doc__ = f.__doc__
    g.__dict__.update(f.__dict__)
    g.__lk_autograph__ = True
    g.__wrapped__ = f
    return g


def convert(f, strict: bool = False):
    """The converted version of the Python function ``f`` (None if it cannot be
    converted: no source, a lambda, a generator, library code). ``strict`` raises
    :class:`ConversionError` instead of returning None."""
    if not isinstance(f, types.FunctionType) or getattr(f, "__lk_autograph__", False):
        if strict:
            raise ConversionError(f"cannot convert {f!r}: not a Python function")
        return None
    if getattr(f, "__lk_do_not_convert__", False):
        return None
    key = f.__code__
    with _LOCK:
        entry = _CACHE.get(key, False)
        if entry is False:
            try:
                entry = _build(f)
            except Exception as e:  # noqa: BLE001 - unconvertible code runs as written
                if strict:
                    raise ConversionError(f"cannot convert {f.__qualname__}: {e}") from e
                warnings.warn(f"AutoGraph could not convert {f.__qualname__} "
                              f"({type(e).__name__}: {e}); it is traced as written",
                              AutoGraphWarning, stacklevel=2)
                entry = None
            _CACHE[key] = entry
    if entry is None:
        if strict:
            raise ConversionError(f"cannot convert {f.__qualname__}: its source is not "
                                  f"available or it is a lambda or generator")
        return None
    g = _rebind(f, entry[0])
    if g is None and strict:
        raise ConversionError(f"cannot convert {f.__qualname__}: its closure changed")
    return g


def source_of(f) -> str:
    """The converted source of ``f``."""
    convert(f, strict=True)
    return _CACHE[f.__code__][1]


def convert_callable(f):
    """``f`` converted if it is user code AutoGraph converts (functions and methods whose
    source is available, outside layerkit and installed packages), else ``f`` itself."""
    if isinstance(f, types.FunctionType):
        if _is_library(f) or getattr(f, "__lk_do_not_convert__", False):
            return f
        return convert(f) or f
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        fn = f.__func__
        if _is_library(fn) or getattr(fn, "__lk_do_not_convert__", False):
            return f
        g = convert(fn)
        return types.MethodType(g, f.__self__) if g is not None else f
    return f
