"""Saving and loading whole models, and configs of any layerkit object (Keras 3's API).

- :func:`save_model` / :func:`load_model` (also ``Model.save`` and
  ``lk.models.load_model``): ``.keras`` archives in Keras 3's format; see
  :mod:`layerkit.saving.saving_lib`.
- :func:`serialize_keras_object` / :func:`deserialize_keras_object`: configs in Keras 3's
  schema (``module``, ``class_name``, ``config``, ``registered_name``); see
  :mod:`layerkit.saving.serialization_lib`.
- :func:`register_serializable` (Keras's spelling :func:`register_keras_serializable`),
  :func:`get_registered_object`, :func:`get_registered_name`, :func:`get_custom_objects`,
  :class:`CustomObjectScope` / :func:`custom_object_scope`: how a config names your own
  classes and functions; see :mod:`layerkit.saving.object_registration`.

Loading never runs code from a file: everything a config names is looked up in these
registries and layerkit's built-ins.
"""
from layerkit.saving.object_registration import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    register_serializable,
)
from layerkit.saving.saving_lib import load_model, save_model
from layerkit.saving.serialization_lib import deserialize_keras_object, serialize_keras_object

__all__ = ["save_model", "load_model", "serialize_keras_object", "deserialize_keras_object",
           "register_serializable", "register_keras_serializable", "get_registered_object",
           "get_registered_name", "get_custom_objects", "CustomObjectScope",
           "custom_object_scope"]
