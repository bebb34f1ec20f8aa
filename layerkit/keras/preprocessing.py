"""``lk.keras.preprocessing``: tf.keras 2's preprocessing namespace, whose functions now
live in ``lk.utils`` (Keras 3 moved them to ``keras.utils``).

``preprocessing.sequence.pad_sequences``, ``preprocessing.image.load_img`` /
``img_to_array`` / ``array_to_img`` / ``save_img``, and the dataset builders
``timeseries_dataset_from_array``, ``image_dataset_from_directory`` and
``text_dataset_from_directory``.

Examples:
    >>> import layerkit as lk
    >>> lk.keras.preprocessing.sequence.pad_sequences([[1, 2], [3]], maxlen=3).tolist()
    [[0, 1, 2], [0, 0, 3]]
"""
from __future__ import annotations

from types import ModuleType

from layerkit import utils as _utils
from layerkit.utils import (
    image_dataset_from_directory,
    text_dataset_from_directory,
    timeseries_dataset_from_array,
)

__all__ = ["sequence", "image", "image_dataset_from_directory",
           "text_dataset_from_directory", "timeseries_dataset_from_array"]


def _namespace(name: str, doc: str, **members) -> ModuleType:
    mod = ModuleType(f"{__name__}.{name}", doc)
    mod.__dict__.update(members)
    mod.__all__ = sorted(members)  # type: ignore[attr-defined]
    return mod


sequence = _namespace(
    "sequence", "tf.keras 2's ``preprocessing.sequence``.",
    pad_sequences=_utils.pad_sequences,
    timeseries_dataset_from_array=timeseries_dataset_from_array)
image = _namespace(
    "image", "tf.keras 2's ``preprocessing.image`` (the array/file helpers).",
    load_img=_utils.load_img, img_to_array=_utils.img_to_array,
    array_to_img=_utils.array_to_img, save_img=_utils.save_img,
    image_dataset_from_directory=image_dataset_from_directory)
