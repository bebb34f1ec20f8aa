"""``lk.linalg``: TensorFlow's ``tf.linalg`` names, batched over leading axes, with
gradients for the differentiable ones (see ``layerkit/primitives/linalg_ops.py``).

    >>> import layerkit as lk
    >>> round(float(lk.linalg.det([[2.0, 1.0], [1.0, 3.0]])), 5)
    5.0
"""
from typing import TYPE_CHECKING

from layerkit._missing import missing_attribute
from layerkit.primitives.registry import NAMESPACES

globals().update(NAMESPACES["linalg"])
# ---- BEGIN op registry exports for type checkers (generated) ----
if TYPE_CHECKING:  # tests/test_public_hints.py writes this block
    from layerkit.primitives.creation import eye as eye
    from layerkit.primitives.linalg import einsum as einsum
    from layerkit.primitives.linalg import matmul as matmul
    from layerkit.primitives.linalg import norm as norm
    from layerkit.primitives.linalg import tensordot as tensordot
    from layerkit.primitives.linalg_ops import adjoint as adjoint
    from layerkit.primitives.linalg_ops import band_part as band_part
    from layerkit.primitives.linalg_ops import cholesky as cholesky
    from layerkit.primitives.linalg_ops import cholesky_solve as cholesky_solve
    from layerkit.primitives.linalg_ops import cross as cross
    from layerkit.primitives.linalg_ops import det as det
    from layerkit.primitives.linalg_ops import diag as diag
    from layerkit.primitives.linalg_ops import diag_part as diag_part
    from layerkit.primitives.linalg_ops import eigh as eigh
    from layerkit.primitives.linalg_ops import eigvalsh as eigvalsh
    from layerkit.primitives.linalg_ops import inv as inv
    from layerkit.primitives.linalg_ops import logdet as logdet
    from layerkit.primitives.linalg_ops import lstsq as lstsq
    from layerkit.primitives.linalg_ops import matrix_rank as matrix_rank
    from layerkit.primitives.linalg_ops import matrix_transpose as matrix_transpose
    from layerkit.primitives.linalg_ops import matvec as matvec
    from layerkit.primitives.linalg_ops import normalize as normalize
    from layerkit.primitives.linalg_ops import pinv as pinv
    from layerkit.primitives.linalg_ops import qr as qr
    from layerkit.primitives.linalg_ops import set_diag as set_diag
    from layerkit.primitives.linalg_ops import slogdet as slogdet
    from layerkit.primitives.linalg_ops import solve as solve
    from layerkit.primitives.linalg_ops import svd as svd
    from layerkit.primitives.linalg_ops import trace as trace
    from layerkit.primitives.linalg_ops import triangular_solve as triangular_solve
    from layerkit.primitives.math_ops import global_norm as global_norm
    from layerkit.primitives.nn import l2_normalize as l2_normalize
# ---- END op registry exports ----
__all__ = sorted(NAMESPACES["linalg"])


def __getattr__(name: str):
    raise missing_attribute("layerkit.linalg", name)
