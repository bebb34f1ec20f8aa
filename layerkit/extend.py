"""``layerkit.extend``: define a new op with its gradient, once.

An op is a NumPy ``forward`` and a ``gradient`` written with layerkit ops. :func:`defop`
turns the pair into a public function that then works everywhere a built-in op does:
eagerly, on ``GradientTape``s, to any order (the gradient is itself made of
differentiable ops), and inside ``lk.function`` (the tracer records it as one node).

Example: a cube op, used in a layer and under ``lk.function``.

    >>> import layerkit as lk
    >>> from layerkit import extend
    >>> def cube_gradient(g, inputs, output):
    ...     (x,) = inputs
    ...     return (g * 3.0 * lk.square(x),)
    >>> cube = extend.defop("cube", lambda x: x ** 3, cube_gradient)
    >>> x = lk.constant([2.0])
    >>> with lk.GradientTape() as outer:
    ...     outer.watch(x)
    ...     with lk.GradientTape() as inner:
    ...         inner.watch(x)
    ...         y = cube(x)
    ...     dy = inner.gradient(y, x)            # 3 x^2
    >>> y.numpy(), dy.numpy(), outer.gradient(dy, x).numpy()   # 6 x
    (array([8.], dtype=float32), array([12.], dtype=float32), array([12.], dtype=float32))

    >>> class Cubic(lk.layers.Layer):
    ...     def build(self, input_shape):
    ...         self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones")
    ...     def call(self, inputs):
    ...         return cube(inputs) * self.scale
    >>> layer = Cubic()
    >>> @lk.function
    ... def loss_and_grads(inputs):
    ...     with lk.GradientTape() as tape:
    ...         loss = lk.reduce_sum(layer(inputs))
    ...     return loss, tape.gradient(loss, layer.trainable_variables)
    >>> loss, grads = loss_and_grads(lk.constant([[1.0, 2.0]]))
    >>> float(loss), grads[0].numpy()
    (9.0, array([1., 8.], dtype=float32))
"""
from __future__ import annotations

from collections.abc import Callable

from layerkit._core.op import Op, apply

__all__ = ["defop"]


def defop(name: str, forward: Callable, gradient: Callable | None = None, *,
          num_outputs: int = 1, reads: tuple | None = None) -> Callable:
    """Define an op from a NumPy ``forward`` and a ``gradient`` in layerkit ops.

    Args:
        name: the op's name (shown in errors, graphs and ONNX export failures).
        forward: ``forward(*arrays, **attrs)`` on NumPy arrays, returning an array (or a
            tuple of ``num_outputs`` arrays). It must not modify its inputs.
        gradient: ``gradient(upstream, inputs, output, **attrs)`` returning one gradient
            (a Tensor of the input's shape, or None) per input. ``upstream`` is the
            gradient of the output (a tuple of them for several outputs), ``inputs`` the
            input Tensors, ``output`` the forward result(s). Write it with layerkit ops
            (``lk.multiply``, operators, ...) so that higher-order gradients work.
            Omit it for an op that is not differentiable (it then records nothing).
        num_outputs: how many arrays ``forward`` returns (1: a single array).
        reads: what ``gradient`` reads besides shapes and dtypes: a tuple of input
            positions and/or ``"out"`` (the output(s)); ``()`` for none. Tapes then
            keep only those values of recorded calls once nothing else refers to them
            (the others become NaN-filled stand-ins, so a wrong declaration shows as
            NaN gradients). None (the default) keeps everything.

    Returns:
        ``op(*inputs, **attrs)``: inputs are Tensors, arrays, scalars or nested lists;
        keyword arguments are passed to ``forward`` and ``gradient`` unchanged (they
        must be hashable constants: ints, floats, strings, tuples). The underlying
        record is ``op.record``.

    Raises:
        TypeError: ``forward``/``gradient`` is not callable, or (when the op is
            differentiated) ``gradient`` returns the wrong number of gradients.
        ValueError: a ``reads`` entry is neither an input position nor ``"out"``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"defop: name must be a non-empty string, received {name!r}")
    if not callable(forward):
        raise TypeError(f"defop({name!r}): forward must be callable, received {forward!r}")
    if gradient is not None and not callable(gradient):
        raise TypeError(f"defop({name!r}): gradient must be callable, received {gradient!r}")
    if not isinstance(num_outputs, int) or num_outputs < 1:
        raise TypeError(f"defop({name!r}): num_outputs must be a positive int, received "
                        f"{num_outputs!r}")

    def vjp(g, ins, out, needs, **attrs):
        grads = gradient(g, ins, out, **attrs)
        if not isinstance(grads, (tuple, list)) or len(grads) != len(ins):
            got = len(grads) if isinstance(grads, (tuple, list)) else type(grads).__name__
            raise TypeError(f"{name}: the gradient must return a tuple of {len(ins)} "
                            f"gradient(s), one per input (None for no gradient); "
                            f"received {got}")
        return tuple(gi if n else None for gi, n in zip(grads, needs))

    record = Op(name, forward, None if gradient is None else vjp, num_outputs=num_outputs,
                reads=reads)

    def op(*inputs, **attrs):
        return apply(record, *inputs, **attrs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"The user-defined op {name!r} (made with layerkit.extend.defop)."
    op.record = record
    return op
