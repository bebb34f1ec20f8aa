"""gradients_function / value_and_gradients_function: thin front doors over the tape."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from layerkit._core.convert import convert_to_tensor
from layerkit.autodiff.tape import GradientTape


def value_and_gradients_function(f: Callable, params: Sequence[int] | None = None) -> Callable:
    """Return ``g(*args) -> (f(*args), [df/dargs[i] for i in params])``.

    Args:
        f: a function of Tensors returning a Tensor (non-scalar outputs are summed).
        params: indices of the positional arguments to differentiate (default all).

    Keyword arguments of ``g`` are passed to ``f`` and not differentiated.

    The returned function may itself be differentiated:
    ``gradients_function(lambda x: gradients_function(f)(x)[0])`` is f''.
    """

    if params is not None and not isinstance(params, (list, tuple, range)):
        if isinstance(params, int) and not isinstance(params, bool):
            params = [params]
        else:
            raise TypeError(f"gradients_function: params must be a sequence of argument "
                            f"indices or None, received {type(params).__name__}")

    def vg(*args, **kwargs):
        # Keyword arguments are passed through to f and not differentiated (as in TF).
        ts = [convert_to_tensor(a) for a in args]
        idx = list(range(len(ts))) if params is None else list(params)
        for i in idx:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(ts):
                raise ValueError(
                    f"gradients_function: params index {i} out of range for "
                    f"{len(ts)} positional arguments"
                )
        with GradientTape() as tape:
            tape.watch([ts[i] for i in idx])
            value = f(*ts, **kwargs)
        grads = tape.gradient(value, [ts[i] for i in idx])
        return value, grads

    vg.__name__ = f"value_and_gradients_{getattr(f, '__name__', 'f')}"
    return vg


def gradients_function(f: Callable, params: Sequence[int] | None = None) -> Callable:
    """Return ``g(*args)`` giving a list with the gradient of ``f`` for each argument.

    Examples:
        >>> import layerkit as lk
        >>> grad = lk.gradients_function(lambda x: x * x)
        >>> grad(3.0)
        [Tensor(6., shape=(), dtype=float32)]
    """
    vg = value_and_gradients_function(f, params)

    def g(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    g.__name__ = f"gradients_{getattr(f, '__name__', 'f')}"
    return g
