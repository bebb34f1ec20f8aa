"""Whole models in Keras 3 ``.keras`` archives: ``save_model`` and ``load_model``.

An archive is a zip (members stored uncompressed, as Keras writes them) with:

- ``metadata.json``: ``{"keras_version", "date_saved", "layerkit_version"}``
  (``keras_version`` is the Keras release whose format layerkit writes);
- ``config.json``: the model's config in Keras 3's schema (see
  :mod:`layerkit.saving.serialization_lib`), with ``build_config`` and, for a compiled
  model, ``compile_config`` (optimizer, loss, metrics, ...);
- the weights, one of:

  - ``model.weights.h5`` (Keras's own member): every layer's weights at its Keras path
    (``layers/dense/vars/0``, ...) and the optimizer's variables under
    ``optimizer/vars``. layerkit writes it when the optional ``h5py`` is installed
    (``pip install layerkit[h5]``), so Keras 3 loads the archive; reading one needs
    ``h5py`` too.
  - ``model.weights.lkckpt``: the same paths and arrays in layerkit's checkpoint format
    (:mod:`layerkit.checkpoint.format`: checksummed, no pickle). layerkit writes it when
    ``h5py`` is missing (or ``weights_format="layerkit"``), so saving never needs an
    optional package; Keras cannot read this member.

Loading never executes code from the file: classes are found by name (built-ins,
registered objects, ``custom_objects``), lambdas are refused, nothing is unpickled or
unmarshalled, and members are read into memory by their exact names (an archive is
never extracted, so member names cannot write anywhere). Malformed archives (not a
zip, unsafe or duplicate member names, oversized or highly compressed members, missing
members, invalid JSON) raise ``ValueError`` naming the file and the problem.

Writes are atomic (:func:`layerkit.checkpoint.format.atomic_write_bytes`): the archive is
assembled in memory, written to a temporary file in the same directory, fsynced and
renamed over the target, so a crash leaves the previous file intact. In a multi-process
``lk.distribute`` job only rank 0 writes (the other ranks return the same path at once).
"""
from __future__ import annotations

import datetime
import io
import json
import os
import tempfile
import zipfile
from typing import Any

from layerkit._core import distribution
from layerkit._core.types import PathLike

__all__ = ["save_model", "load_model", "model_from_json", "load_archive_weights",
           "KERAS_FORMAT_VERSION"]

KERAS_FORMAT_VERSION = "3.15.1"  # the Keras release whose archive format is written
CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS_H5 = "model.weights.h5"
WEIGHTS_LK = "model.weights.lkckpt"
_JSON_LIMIT = 64 << 20            # config.json / metadata.json larger than this: refused
_BOMB_FLOOR = 256 << 20           # members above this size ...
_BOMB_RATIO = 100                 # ... expanding more than 100x are refused (zip bombs)


# ---- saving ---------------------------------------------------------------------------
def save_model(model: Any, filepath: PathLike, overwrite: bool = True,
               weights_format: str = "auto") -> str:
    """Save a whole model (architecture, weights, optimizer state) as a ``.keras`` file.

    See the module docstring for the archive's contents.

    Args:
        model: an ``lk.Model`` (functional, ``Sequential``, or a subclass whose
            ``get_config`` returns its constructor arguments).
        filepath: the file to write; it must end in ``.keras`` (or ``.h5``/``.hdf5``:
            Keras's legacy HDF5 format, see :mod:`layerkit.saving.legacy_h5`).
        overwrite: replace an existing file (else ``FileExistsError``).
        weights_format: ``"auto"`` (HDF5 when ``h5py`` is installed, else layerkit's
            checkpoint format), ``"h5"`` or ``"layerkit"``.

    Returns:
        The path written.

    Raises:
        ValueError: a path not ending in ``.keras``, an unknown ``weights_format``, or
            a config that is not JSON-serializable (the message names the model).
        FileExistsError: the file exists and ``overwrite`` is False.
        ImportError: ``weights_format="h5"`` without ``h5py``.
        NotImplementedError: a layer or model without a usable ``get_config``.

    Examples:
        >>> import os, tempfile, layerkit as lk
        >>> model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2)])
        >>> path = model.save(os.path.join(tempfile.mkdtemp(), "m.keras"))
        >>> lk.models.load_model(path).get_weights()[0].shape
        (3, 2)
    """
    from layerkit import __version__
    from layerkit.checkpoint.format import atomic_write_bytes
    from layerkit.saving.serialization_lib import ObjectSharingScope, serialize_keras_object

    path = os.fspath(filepath)
    if path.endswith((".h5", ".hdf5")):
        import warnings

        from layerkit.saving.legacy_h5 import save_model_to_hdf5

        warnings.warn(f"save_model({path!r}): writing Keras's legacy HDF5 format; the "
                      f"'.keras' format is recommended (as Keras 3 says)", stacklevel=2)
        if not distribution.writes_files():
            return path
        return save_model_to_hdf5(model, path, overwrite=overwrite)
    if not path.endswith(".keras"):
        raise ValueError(f"save_model: the file name must end in '.keras' (or '.h5' for "
                         f"Keras's legacy HDF5 format); received {path!r} (weights alone: "
                         f"model.save_weights('x.weights.h5'))")
    kind = _weights_kind(weights_format)
    if not distribution.writes_files():   # lk.distribute: rank 0 writes the archive
        return path
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"save_model: {path!r} exists and overwrite=False")
    with ObjectSharingScope():
        config = serialize_keras_object(model)
    try:
        config_json = json.dumps(config)
    except (TypeError, ValueError) as e:
        raise ValueError(f"save_model({path!r}): the config of model '{model.name}' is not "
                         f"JSON-serializable ({e}); a get_config() returns a value that "
                         f"serialize_keras_object cannot convert") from e
    metadata = json.dumps({"keras_version": KERAS_FORMAT_VERSION,
                           "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
                           "layerkit_version": __version__})
    member, weights = _weights_bytes(model, kind)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(METADATA, metadata)
        zf.writestr(CONFIG, config_json)
        zf.writestr(member, weights)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _weights_kind(weights_format: str) -> str:
    if weights_format == "auto":
        try:
            import h5py  # noqa: F401
        except ImportError:
            return "layerkit"
        return "h5"
    if weights_format not in ("h5", "layerkit"):
        raise ValueError(f"save_model: weights_format must be 'auto', 'h5' or 'layerkit'; "
                         f"received {weights_format!r}")
    return weights_format


def _weights_bytes(model, kind: str) -> tuple[str, bytes]:
    from layerkit.io import keras_weights

    if kind == "h5":
        return WEIGHTS_H5, keras_weights.keras_weights_h5_bytes(model)
    from layerkit.checkpoint.format import write_file

    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, WEIGHTS_LK)
        write_file(target, keras_weights.keras_weight_arrays(model),
                   meta={"kind": "keras weights by path"})
        with open(target, "rb") as f:
            return WEIGHTS_LK, f.read()


# ---- loading --------------------------------------------------------------------------
def load_model(filepath: PathLike, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True) -> Any:
    """Load a model from a ``.keras`` archive written by layerkit or by Keras 3 (or from a
    legacy Keras ``.h5`` file, see :mod:`layerkit.saving.legacy_h5`).

    The model is rebuilt from ``config.json`` (classes found by name only), compiled
    from its ``compile_config`` (unless ``compile=False``), and given the saved weights
    and optimizer state.

    Args:
        filepath: the ``.keras`` file (a path or a binary file object).
        custom_objects: ``{name: class or function}`` for custom layers, losses, ...
            that are not registered with :func:`~layerkit.saving.register_serializable`.
        compile: compile the model as it was saved (optimizer state included).
        safe_mode: refuse configs that would need code (Python lambdas); layerkit never
            deserializes code, so lambdas are refused either way.

    Returns:
        The model.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a valid archive (the message names the file and the problem),
            an unknown class, or weights that do not match the architecture.
        ImportError: the archive's weights are HDF5 and ``h5py`` is not installed.

    Examples:
        >>> import layerkit as lk
        >>> model = lk.models.load_model("model.keras")  # doctest: +SKIP
    """
    from layerkit.layers.layer import Layer
    from layerkit.saving.serialization_lib import deserialize_keras_object

    source = os.fspath(filepath) if isinstance(filepath, (str, os.PathLike)) else \
        getattr(filepath, "name", "<file object>")
    if isinstance(filepath, (str, os.PathLike)):
        if not os.path.exists(source):
            raise FileNotFoundError(f"load_model: no such file: {source!r}")
        if os.path.isdir(source):
            raise ValueError(f"load_model({source!r}): is a directory; expected a .keras file")
        from layerkit.saving.legacy_h5 import is_hdf5, load_model_from_hdf5

        if is_hdf5(source):
            return load_model_from_hdf5(source, custom_objects, compile, safe_mode)
    try:
        zf = zipfile.ZipFile(filepath)
    except zipfile.BadZipFile:
        raise ValueError(f"load_model({source!r}): not a .keras archive (not a zip "
                         f"file)") from None
    with zf:
        infos = _check_members(zf, source, "load_model")
        if CONFIG not in infos:
            raise ValueError(f"load_model({source!r}): the archive has no {CONFIG} (members: "
                             f"{sorted(infos)[:10]})")
        config = _read_json(zf, infos[CONFIG], source)
        if METADATA in infos:
            _read_json(zf, infos[METADATA], source)
        if not isinstance(config, dict) or "class_name" not in config:
            raise ValueError(f"load_model({source!r}): {CONFIG} does not describe a model "
                             f"(expected an object with 'class_name' and 'config')")
        if not compile:
            config["compile_config"] = None
        model = deserialize_keras_object(config, custom_objects, safe_mode, kind="layers")
        if not isinstance(model, Layer):
            raise ValueError(f"load_model({source!r}): {CONFIG} describes a "
                             f"{type(model).__name__}, not a model")
        _load_weights(model, zf, infos, source, "load_model")
    return model


def load_archive_weights(model, filepath, skip_mismatch: bool = False) -> list:
    """Assign the weights of a ``.keras`` archive (either weights member) to a built
    model of the same architecture; ``Model.load_weights("x.keras")`` calls this.

    Returns:
        The Keras group paths that were assigned.

    Raises:
        ValueError: not a valid archive, or weights that do not match (unless
            ``skip_mismatch``).
    """
    source = os.fspath(filepath)
    try:
        zf = zipfile.ZipFile(source)
    except zipfile.BadZipFile:
        raise ValueError(f"load_weights({source!r}): not a .keras archive (not a zip "
                         f"file)") from None
    with zf:
        return _load_weights(model, zf, _check_members(zf, source, "load_weights"), source,
                             "load_weights", skip_mismatch)


def _check_members(zf: zipfile.ZipFile, source: str, what: str) -> dict:
    """``{name: ZipInfo}``, refusing unsafe, duplicate or encrypted members."""
    infos: dict = {}
    for info in zf.infolist():
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        if (name.startswith(("/", "\\")) or "\\" in name or "\x00" in name or ".." in parts
                or (len(name) > 1 and name[1] == ":")):
            raise ValueError(f"{what}({source!r}): the archive has an unsafe member name "
                             f"{name!r} (absolute, or leaving the archive with '..'); "
                             f"refusing it")
        if name in infos:
            raise ValueError(f"{what}({source!r}): the archive has two members named "
                             f"{name!r}")
        if info.flag_bits & 0x1:
            raise ValueError(f"{what}({source!r}): member {name!r} is encrypted")
        if info.file_size > _BOMB_FLOOR and info.file_size > _BOMB_RATIO * max(
                info.compress_size, 1):
            raise ValueError(f"{what}({source!r}): member {name!r} declares "
                             f"{info.file_size} bytes but stores {info.compress_size}; "
                             f"refusing a likely decompression bomb")
        infos[name] = info
    return infos


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, source: str) -> bytes:
    try:
        return zf.read(info)
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise ValueError(f"load_model({source!r}): member {info.filename!r} is corrupted "
                         f"({e})") from None


def _read_json(zf: zipfile.ZipFile, info: zipfile.ZipInfo, source: str):
    if info.file_size > _JSON_LIMIT:
        raise ValueError(f"load_model({source!r}): {info.filename} declares "
                         f"{info.file_size} bytes, more than the {_JSON_LIMIT} allowed")
    try:
        return json.loads(_read_member(zf, info, source).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"load_model({source!r}): {info.filename} is not valid JSON "
                         f"({e})") from None


def _load_weights(model, zf: zipfile.ZipFile, infos: dict, source: str, what: str,
                  skip_mismatch: bool = False) -> list:
    from layerkit.io import keras_weights

    if WEIGHTS_H5 in infos:
        from layerkit.io._optional import require

        h5py = require("h5py", "h5", f"the HDF5 weights of .keras archives ({source})")
        data = _read_member(zf, infos[WEIGHTS_H5], source)
        where = f"{source}:{WEIGHTS_H5}"
        try:
            f = h5py.File(io.BytesIO(data), "r")
        except OSError as e:
            raise ValueError(f"{what}({where!r}): not an HDF5 file ({e})") from None
        with f:
            return keras_weights.assign_keras_weights(model, keras_weights.h5_datasets(f),
                                                      where, skip_mismatch)
    if WEIGHTS_LK in infos:
        from layerkit.checkpoint.format import CheckpointError, CheckpointReader

        data = _read_member(zf, infos[WEIGHTS_LK], source)
        where = f"{source}:{WEIGHTS_LK}"
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, WEIGHTS_LK)
            with open(target, "wb") as f:
                f.write(data)
            try:
                with CheckpointReader(target) as reader:
                    flat = reader.read_many(reader.keys())
            except CheckpointError as e:
                raise ValueError(f"{what}({where!r}): {e.problem}") from None
        return keras_weights.assign_keras_weights(model, flat, where, skip_mismatch)
    raise ValueError(f"{what}({source!r}): the archive has no weights member (expected "
                     f"{WEIGHTS_H5} or {WEIGHTS_LK}; members: {sorted(infos)[:10]}); "
                     f"sharded or .npz archives are not supported")


def model_from_json(json_string: str, custom_objects: dict | None = None) -> Any:
    """A new model (fresh weights) from ``Model.to_json()`` output or Keras 3's.

    Args:
        json_string: the JSON text.
        custom_objects: ``{name: class or function}`` for objects that are neither built
            in nor registered.

    Raises:
        ValueError: invalid JSON, or an unknown class.

    Examples:
        >>> import layerkit as lk
        >>> model = lk.Sequential([lk.Input((3,)), lk.layers.Dense(2)])
        >>> again = lk.models.model_from_json(model.to_json())
        >>> [type(x).__name__ for x in again.layers]
        ['Dense']
    """
    from layerkit.saving.serialization_lib import deserialize_keras_object

    try:
        config = json.loads(json_string)
    except (TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"model_from_json: not valid JSON ({e})") from None
    return deserialize_keras_object(config, custom_objects, kind="layers")
