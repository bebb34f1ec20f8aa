"""``image_dataset_from_directory`` and ``text_dataset_from_directory``: local directories
of files (one subdirectory per class) as ``lk.data`` Datasets, with Keras 3's rules for
labels, file order, shuffling and validation splits. Images are decoded by
``layerkit.utils.image_utils`` (PNG and BMP built in; JPEG and GIF through the optional
Pillow extra)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from layerkit._core.types import PathLike, TensorLike
from layerkit.data import AUTOTUNE, Dataset
from layerkit.primitives.image import RESIZE_METHODS
from layerkit.utils import image_utils

__all__ = ["image_dataset_from_directory", "text_dataset_from_directory"]

IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
# Keras's interpolation names; layerkit resizes with the first two
KERAS_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
                        "gaussian", "mitchellcubic")


class DirectoryDataset(Dataset):
    """A Dataset that also carries the ``class_names`` it was built with (as Keras's)."""

    class_names: list | None = None


def _check_arguments(what: str, labels, label_mode, class_names, validation_split, subset,
                     shuffle, seed, format) -> None:
    if format not in ("tf", "grain"):
        raise ValueError(f'{what}: `format` should be either "tf" or "grain". Received: '
                         f"format={format!r}")
    if labels is not None and not (isinstance(labels, str) and labels == "inferred"):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(f"{what}: `labels` should be 'inferred', None, or a list/tuple of "
                             f"integer labels, one per file in the directory (sorted order). "
                             f"Received: labels={labels!r:.60}")
        if class_names:
            raise ValueError(f"{what}: you can only pass `class_names` if "
                             f"labels='inferred'. Received: class_names={class_names}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f'{what}: `label_mode` must be one of "int", "categorical", '
                         f'"binary", or None. Received: label_mode={label_mode!r}')
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"{what}: `validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if bool(validation_split) != bool(subset):
        raise ValueError(f"{what}: if `subset` is set, `validation_split` must be set, and "
                         f"inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'{what}: `subset` must be either "training", "validation" or '
                         f'"both", received: {subset!r}')
    if validation_split and shuffle and seed is None:
        raise ValueError(f"{what}: if using `validation_split` and shuffling the data, you "
                         f"must provide a `seed` argument, to make sure that there is no "
                         f"overlap between the training and validation subset.")


def _index_directory(what: str, directory, labels, formats, class_names, shuffle, seed,
                     follow_links, verbose):
    """``(paths, labels or None, class_names)``: files in sorted order (class directories
    sorted alphanumerically, then each directory's files walked in sorted order), then
    shuffled with ``RandomState(seed)`` as Keras does."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{what}: directory {directory!r} does not exist")
    if labels == "inferred":
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names) <= set(subdirs):
                raise ValueError(f"{what}: the `class_names` passed did not match the names "
                                 f"of the subdirectories of the target directory. Expected: "
                                 f"{subdirs} (or a subset of it), but received: "
                                 f"class_names={class_names}")
            subdirs = list(class_names)
    else:
        if class_names is not None:
            raise ValueError(f"{what}: `class_names` can only be given with "
                             f"labels='inferred'")
        subdirs = [""]
    paths, found = [], []
    for index, sub in enumerate(subdirs):
        top = os.path.join(directory, sub)
        for root, _, files in sorted(os.walk(top, followlinks=follow_links),
                                     key=lambda w: w[0]):
            for name in sorted(files):
                if name.lower().endswith(formats):
                    paths.append(os.path.join(root, name))
                    found.append(index)
    if labels == "inferred":
        labels = np.asarray(found, np.int32)
        names: list[str] | None = list(subdirs)
    elif labels is None:
        names = None
    else:
        if len(labels) != len(paths):
            raise ValueError(f"{what}: expected the lengths of `labels` to match the number "
                             f"of files in the target directory. len(labels) is "
                             f"{len(labels)} while we found {len(paths)} files in directory "
                             f"{directory}.")
        names = [str(label) for label in sorted(set(labels))]
        labels = np.asarray(labels)
    if verbose:
        print(f"Found {len(paths)} files." if labels is None else
              f"Found {len(paths)} files belonging to {len(names or ())} classes.")
    if shuffle:
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return paths, labels, names


def _subsets(what: str, noun: str, directory, paths, labels, validation_split,
             subset) -> list:
    """``[(paths, labels, reshuffled)]`` for the requested subset(s): Keras's split, the
    validation files are the last ``int(validation_split * n)`` of the shuffled list.
    ``reshuffled`` is False only for the validation half of ``subset='both'`` (Keras
    buffer-shuffles a lone ``'validation'`` subset, but not that one)."""
    if not validation_split:
        if not paths:
            raise ValueError(f"{what}: no {noun} found in directory {directory}.")
        return [(paths, labels, True)]
    n_val = int(validation_split * len(paths))
    out = []
    for part in (("training", "validation") if subset == "both" else (subset,)):
        n = len(paths) - n_val if part == "training" else n_val
        print(f"Using {n} files for {part}.")
        sl = slice(None, len(paths) - n_val) if part == "training" else slice(
            len(paths) - n_val, None)
        if n == 0 or (part == "training" and n_val == 0):
            # Keras slices [:-0] here too, which leaves no training files
            raise ValueError(f"{what}: no {part} {noun} found in directory {directory}: "
                             f"validation_split={validation_split} of {len(paths)} files "
                             f"gives {n_val} validation files.")
        out.append((paths[sl], None if labels is None else labels[sl],
                    subset != "both" or part == "training"))
    return out


def _label_array(labels, label_mode, num_classes) -> np.ndarray:
    """Keras's label encodings: int32, float32 ``(n, 1)`` or one-hot float32 (a label
    outside ``[0, num_classes)`` is all zeros, as ``tf.one_hot``)."""
    labels = np.asarray(labels)
    if label_mode == "binary":
        return labels.astype(np.float32)[:, None]
    if label_mode == "categorical":
        return (labels.astype(np.int64)[:, None] == np.arange(num_classes)).astype(
            np.float32)
    return labels.astype(np.int32)


def _build(what: str, noun: str, directory, formats, load, labels, label_mode, class_names,
           batch_size, shuffle, seed, validation_split, subset, follow_links, format,
           verbose):
    _check_arguments(what, labels, label_mode, class_names, validation_split, subset, shuffle,
                     seed, format)
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    if seed is None:
        seed = int(np.random.randint(1_000_000))
    paths, found, names = _index_directory(what, directory, labels, formats, class_names,
                                           shuffle, seed, follow_links, verbose)
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(f'{what}: when passing label_mode="binary", there must be exactly 2 '
                         f"class_names. Received: class_names={names}")
    datasets = []
    for part_paths, part_labels, reshuffled in _subsets(what, noun, directory, paths, found,
                                                        validation_split, subset):
        index = Dataset.from_tensor_slices(np.arange(len(part_paths)))
        if shuffle and reshuffled:   # Keras reshuffles within a buffer each epoch
            index = index.shuffle(batch_size * 8 if batch_size else 1024, seed=seed)
        targets = None if part_labels is None else _label_array(part_labels, label_mode,
                                                                len(names))

        def element(i, part_paths=part_paths, targets=targets):
            i = int(i)
            x = load(part_paths[i])
            return x if targets is None else (x, targets[i])

        ds = index.map(element, num_parallel_calls=AUTOTUNE)   # file reads, zlib
        if batch_size is not None:
            ds = ds.batch(batch_size)
        out = DirectoryDataset(ds.prefetch(2)._node)
        out.class_names = names
        datasets.append(out)
    return datasets if subset == "both" else datasets[0]


def text_dataset_from_directory(directory: PathLike, labels: TensorLike = "inferred",
                                label_mode: str = "int", class_names: Sequence[str] | None = None,
                                batch_size: int | None = 32, max_length: int | None = None,
                                shuffle: bool = True, seed: int | None = None,
                                validation_split: float | None = None, subset: str | None = None,
                                follow_links: bool = False, format: str = "tf",
                                verbose: bool = True) -> Any:
    """Text files (``.txt``) in class subdirectories as a Dataset of ``(texts, labels)``.

    Keras 3's ``keras.utils.text_dataset_from_directory``: with ``labels='inferred'`` each
    subdirectory of ``directory`` is a class (sorted by name, or ``class_names``' order);
    the files are listed in sorted order and shuffled with
    ``numpy.random.RandomState(seed)`` (Keras's order), and each pass reshuffles within a
    buffer of ``8 * batch_size`` (1024 unbatched), except the validation dataset of
    ``subset='both'``, which keeps the file order. Texts are ``bytes``
    (UTF-8, as TensorFlow strings); ``max_length`` keeps their first bytes.

    Args:
        directory: the directory.
        labels: ``'inferred'``, None (texts only) or a list of labels, one per file in
            sorted order.
        label_mode: ``'int'`` (int32), ``'categorical'`` (one-hot float32), ``'binary'``
            (float32 of shape ``(batch, 1)``) or None.
        class_names: the classes (subdirectory names) to use, in this order.
        batch_size: texts per batch, or None for single texts.
        max_length: the maximum length of a text, in bytes.
        shuffle: shuffle the files.
        seed: the shuffling seed (required with ``validation_split`` and ``shuffle``).
        validation_split: the fraction of the files held out (the last ones).
        subset: ``'training'``, ``'validation'`` or ``'both'`` (returns two datasets).
        follow_links: follow symbolic links to subdirectories.
        format: ``'tf'`` or ``'grain'`` (Keras's choice of return type); both give a
            ``lk.data.Dataset``.
        verbose: print how many files and classes were found.

    Returns:
        A ``lk.data.Dataset`` (with a ``class_names`` attribute), or a list of two for
        ``subset='both'``.

    Raises:
        ValueError: invalid arguments (Keras's checks and messages), no files.
        FileNotFoundError: ``directory`` does not exist.
    """
    def load(path):
        with open(path, "rb") as f:
            text = f.read()
        return np.array(text if max_length is None else text[:max_length])

    return _build("text_dataset_from_directory", "text files", directory, (".txt",), load,
                  labels, label_mode, class_names, batch_size, shuffle, seed, validation_split,
                  subset, follow_links, format, verbose)


def image_dataset_from_directory(directory: PathLike, labels: TensorLike = "inferred",
                                 label_mode: str = "int", class_names: Sequence[str] | None = None,
                                 color_mode: str = "rgb", batch_size: int | None = 32,
                                 image_size: tuple[int, int] = (256, 256), shuffle: bool = True,
                                 seed: int | None = None, validation_split: float | None = None,
                                 subset: str | None = None, interpolation: str = "bilinear",
                                 follow_links: bool = False, crop_to_aspect_ratio: bool = False,
                                 pad_to_aspect_ratio: bool = False, data_format: str | None = None,
                                 format: str = "tf", verbose: bool = True) -> Any:
    """Images (png, bmp, jpeg, gif) in class subdirectories as a Dataset of
    ``(images, labels)``.

    Keras 3's ``keras.utils.image_dataset_from_directory``, with its rules for labels,
    file order, shuffling and splits (see :func:`text_dataset_from_directory`) and
    TensorFlow's pixels: PNG and BMP are decoded by layerkit itself (NumPy and ``zlib``;
    no extra dependency, though Pillow speeds up PNG when installed), JPEG and GIF by
    Pillow, an optional extra
    (``pip install layerkit[images]``). Images are resized to ``image_size`` with
    ``tf.image.resize``'s numbers (half-pixel centres) and come as float32 in
    ``[0, 255]``, except with ``interpolation='nearest'``, which keeps uint8 as
    TensorFlow does; shape ``(batch, height, width, channels)``, or channels first with
    ``data_format='channels_first'``.

    Args:
        directory: as in :func:`text_dataset_from_directory`.
        labels: as in :func:`text_dataset_from_directory`.
        label_mode: as in :func:`text_dataset_from_directory`.
        class_names: as in :func:`text_dataset_from_directory`.
        batch_size: as in :func:`text_dataset_from_directory`.
        shuffle: as in :func:`text_dataset_from_directory`.
        seed: as in :func:`text_dataset_from_directory`.
        validation_split: as in :func:`text_dataset_from_directory`.
        subset: as in :func:`text_dataset_from_directory`.
        follow_links: as in :func:`text_dataset_from_directory`.
        format: as in :func:`text_dataset_from_directory`.
        verbose: as in :func:`text_dataset_from_directory`.
        color_mode: ``'rgb'``, ``'rgba'`` or ``'grayscale'`` (1 channel, ITU-R 601 luma).
        image_size: ``(height, width)`` (or one int for both).
        interpolation: ``'bilinear'`` or ``'nearest'``; Keras's other names
            (``'bicubic'``, ``'area'``, ``'lanczos3'``, ...) are refused by name.
        crop_to_aspect_ratio: center-crop to the target aspect ratio before resizing.
        pad_to_aspect_ratio: resize to fit within ``image_size`` keeping the aspect ratio
            and pad with zeros (``tf.image.resize_with_pad``).
        data_format: ``'channels_last'`` (default) or ``'channels_first'``.

    Returns:
        A ``lk.data.Dataset`` (with ``class_names``), or a list of two for
        ``subset='both'``.

    Raises:
        ValueError: invalid arguments (Keras's checks and messages), no images, an
            unreadable image file (named).
        ImportError: a JPEG or GIF file without Pillow installed.
        FileNotFoundError: ``directory`` does not exist.

    Examples:
        >>> import layerkit as lk
        >>> train, val = lk.utils.image_dataset_from_directory(
        ...     "flowers/", image_size=(180, 180), validation_split=0.2,
        ...     subset="both", seed=123)                          # doctest: +SKIP
    """
    what = "image_dataset_from_directory"
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError(f'{what}: `color_mode` must be one of {{"rgb", "rgba", '
                         f'"grayscale"}}. Received: color_mode={color_mode!r}')
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    if (not isinstance(image_size, (list, tuple)) or len(image_size) != 2
            or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1
                   for s in image_size)):
        raise ValueError(f"{what}: invalid `image_size` value. Expected a tuple of 2 "
                         f"positive integers. Received: image_size={image_size!r}")
    interpolation = str(interpolation).lower()
    if interpolation not in KERAS_INTERPOLATIONS:
        raise ValueError(f"{what}: argument `interpolation` should be one of "
                         f"{KERAS_INTERPOLATIONS}. Received: interpolation={interpolation}")
    if interpolation not in RESIZE_METHODS:
        raise ValueError(f"{what}: interpolation={interpolation!r} is not available in "
                         f"layerkit; use one of {RESIZE_METHODS}")
    data_format = image_utils.check_data_format(what, data_format)
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError(f"{what}: only one of `pad_to_aspect_ratio`, "
                         f"`crop_to_aspect_ratio` can be set to `True`.")
    size = (int(image_size[0]), int(image_size[1]))

    def load(path):
        with open(path, "rb") as f:
            data = f.read()
        try:
            img = image_utils.decode_image(data, channels, what)
        except ValueError as e:
            raise ValueError(f"{what}: cannot decode {path}: {e}") from e
        x = image_utils.resize_image(img, size, interpolation, crop_to_aspect_ratio,
                                     pad_to_aspect_ratio)
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x

    return _build(what, "images", directory, IMAGE_FORMATS, load, labels, label_mode,
                  class_names, batch_size, shuffle, seed, validation_split, subset,
                  follow_links, format, verbose)

