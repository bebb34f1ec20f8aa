"""``lk.distribute``: synchronous data-parallel training over MPI (TensorFlow's names).

    strategy = lk.distribute.MultiWorkerMirroredStrategy()   # under mpiexec -n N
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(dataset, epochs=3)

Launch with ``mpiexec -n 4 python train.py`` or ``python -m layerkit.distribute.launch
-n 4 train.py``. MPI comes from mpi4py (``pip install 'layerkit[mpi]'`` brings mpi4py and
the mpich wheel with its ``mpiexec``; an existing cluster MPI works too). Importing this
package does not import mpi4py: creating a ``MultiWorkerMirroredStrategy`` does.
"""
from layerkit.distribute import experimental
from layerkit.distribute.input import DistributedDataset, DistributedIterator, InputContext
from layerkit.distribute.strategy import (
    MultiWorkerMirroredStrategy,
    ReduceOp,
    ReplicaContext,
    Strategy,
    StrategyExtended,
    allreduce,
    broadcast_variables,
    get_replica_context,
    get_strategy,
    has_strategy,
    in_cross_replica_context,
)

__all__ = ["MultiWorkerMirroredStrategy", "Strategy", "StrategyExtended", "ReduceOp",
           "ReplicaContext", "InputContext", "DistributedDataset", "DistributedIterator",
           "get_strategy", "has_strategy", "in_cross_replica_context", "get_replica_context",
           "allreduce", "broadcast_variables", "experimental"]
