"""layerkit.data: streaming input pipelines.

``Dataset`` is a lazy, immutable, re-iterable description built from a source and
chained transformations; iterating runs it. Elements are ``lk.Tensor`` or nested
tuples/dicts of them. Iterators can be saved and restored mid-pass.

    >>> import layerkit as lk
    >>> ds = lk.data.Dataset.from_tensor_slices(([1., 2., 3., 4.], [0, 1, 0, 1]))
    >>> ds = ds.shuffle(4, seed=0).batch(2).prefetch(lk.data.AUTOTUNE)
    >>> [tuple(x.shape) for x, y in ds]
    [(2,), (2,)]

pyarrow is imported only when a Parquet/Arrow/CSV source is used.
"""
from layerkit.data import experimental
from layerkit.data.dataset import Dataset, Iterator, TextLineDataset
from layerkit.data.node import AUTOTUNE, INFINITE, UNKNOWN
from layerkit.data.options import Options, ThreadingOptions
from layerkit.data.rng import element_rng, element_seed
from layerkit.data.structure import DatasetSpec, TensorSpec

from_tensor_slices = Dataset.from_tensor_slices
from_tensors = Dataset.from_tensors
from_generator = Dataset.from_generator
range = Dataset.range  # noqa: A001  (tf.data's name)
zip = Dataset.zip  # noqa: A001
list_files = Dataset.list_files
from_parquet = Dataset.from_parquet
from_arrow = Dataset.from_arrow
from_csv = Dataset.from_csv
INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN

# ``range`` and ``zip`` are left out of ``__all__`` so a star import cannot shadow builtins.
__all__ = ["Dataset", "Iterator", "TextLineDataset", "TensorSpec", "DatasetSpec", "AUTOTUNE",
           "INFINITE", "UNKNOWN", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Options",
           "ThreadingOptions", "experimental", "element_rng", "element_seed",
           "from_tensor_slices", "from_tensors", "from_generator", "list_files", "from_parquet",
           "from_arrow", "from_csv"]
