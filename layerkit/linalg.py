"""``lk.linalg``: TensorFlow's ``tf.linalg`` names, batched over leading axes, with
gradients for the differentiable ones (see ``layerkit/primitives/linalg_ops.py``).

    >>> import layerkit as lk
    >>> round(float(lk.linalg.det([[2.0, 1.0], [1.0, 3.0]])), 5)
    5.0
"""
from layerkit._missing import missing_attribute
from layerkit.primitives.registry import NAMESPACES

globals().update(NAMESPACES["linalg"])
__all__ = sorted(NAMESPACES["linalg"])


def __getattr__(name: str):
    raise missing_attribute("layerkit.linalg", name)
