"""``lk.math``: TensorFlow's ``tf.math`` names (every one NumPy can serve).

The namespace is built from the op registry (``layerkit.primitives.registry``): each
op says where it is published, next to its definition. A name that ``tf.math`` has and
layerkit does not raises an AttributeError saying so (or naming the layerkit spelling).

    >>> import layerkit as lk
    >>> lk.math.reduce_sum([[1.0, 2.0], [3.0, 4.0]], axis=1).numpy()
    array([3., 7.], dtype=float32)
    >>> lk.math.segment_sum([1.0, 2.0, 3.0], [0, 0, 1]).numpy()
    array([3., 3.], dtype=float32)
"""
from layerkit._missing import missing_attribute
from layerkit.primitives.registry import NAMESPACES

globals().update(NAMESPACES["math"])
__all__ = sorted(NAMESPACES["math"])


def __getattr__(name: str):
    raise missing_attribute("layerkit.math", name)
