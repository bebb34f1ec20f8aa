"""Install Tensor operators as calls to the op records (``+`` is ``add``, ...)."""
from __future__ import annotations

from layerkit._core.tensor import Tensor
from layerkit.ops import array as A
from layerkit.ops import elementwise as E
from layerkit.ops import linalg as L


def _swap(fn):
    def reflected(self, other):
        return fn(other, self)

    reflected.__name__ = f"r{fn.__name__}"
    return reflected


_BINARY = {
    "add": E.add, "sub": E.subtract, "mul": E.multiply, "truediv": E.divide,
    "matmul": L.matmul,
}
for _name, _fn in _BINARY.items():
    setattr(Tensor, f"__{_name}__", _fn)
    setattr(Tensor, f"__r{_name}__", _swap(_fn))

Tensor.__neg__ = E.negative
Tensor.__pos__ = lambda self: self
Tensor.__iter__ = lambda self: iter(A.unstack(self, axis=0)) if self.shape else _no_iter()


def _no_iter():
    raise TypeError("iteration over a 0-d tensor")
