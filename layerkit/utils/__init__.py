"""``lk.utils``: Keras 3's ``keras.utils`` helpers.

- :func:`to_categorical`, :func:`normalize` (arrays and Tensors),
- :func:`set_random_seed` (Python, NumPy and ``lk.random`` at once),
- :func:`pad_sequences`,
- :func:`timeseries_dataset_from_array`, :func:`split_dataset` (``lk.data`` Datasets),
- :class:`Progbar` (the bar ``fit`` shows),
- :func:`plot_model` (PNG/SVG/PDF with matplotlib, a text diagram or DOT; no graphviz),
- :func:`get_file` (Keras's file cache; local ``file://`` origins only, no downloads),
- :func:`image_dataset_from_directory` (PNG and BMP built in, JPEG and GIF with Pillow),
  :func:`text_dataset_from_directory`,
- :func:`load_img`, :func:`img_to_array`, :func:`array_to_img`, :func:`save_img` (Pillow
  images, as Keras),
- the serialization registry of ``lk.saving`` under Keras's ``keras.utils`` names
  (:func:`register_keras_serializable`, :func:`custom_object_scope`, ...).
"""
from layerkit.saving.object_registration import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)
from layerkit.saving.serialization_lib import deserialize_keras_object, serialize_keras_object
from layerkit.utils.batch_utils import pack_x_y_sample_weight, unpack_x_y_sample_weight
from layerkit.utils.dataset_utils import split_dataset
from layerkit.utils.directory_dataset_utils import (
    image_dataset_from_directory,
    text_dataset_from_directory,
)
from layerkit.utils.file_utils import get_file
from layerkit.utils.image_utils import array_to_img, img_to_array, load_img, save_img
from layerkit.utils.model_visualization import plot_model
from layerkit.utils.numerical_utils import normalize, to_categorical
from layerkit.utils.progbar import Progbar
from layerkit.utils.py_dataset import PyDataset
from layerkit.utils.rng_utils import set_random_seed
from layerkit.utils.sequence_utils import pad_sequences
from layerkit.utils.timeseries_dataset_utils import timeseries_dataset_from_array

Sequence = PyDataset  # Keras 2's name (keras.utils.Sequence)

__all__ = ["PyDataset", "Sequence", "pack_x_y_sample_weight", "unpack_x_y_sample_weight",
           "CustomObjectScope", "custom_object_scope",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "register_keras_serializable", "serialize_keras_object", "deserialize_keras_object",
           "to_categorical", "normalize", "set_random_seed", "pad_sequences",
           "timeseries_dataset_from_array", "split_dataset", "Progbar", "plot_model",
           "get_file", "image_dataset_from_directory", "text_dataset_from_directory",
           "load_img", "img_to_array", "array_to_img", "save_img"]
