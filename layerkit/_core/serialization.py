"""``{'class_name', 'config'}`` round trips shared by losses, metrics, optimizers and
learning-rate schedules."""
from __future__ import annotations


def serialize_object(obj) -> dict:
    """``{'class_name': ..., 'config': ...}`` for an object with ``get_config()``."""
    return {"class_name": type(obj).__name__, "config": obj.get_config()}


def class_for(config: dict, table: dict, custom_objects: dict | None, kind: str,
              hint: str = "") -> type:
    """The class ``config['class_name']`` names in ``table`` (plus ``custom_objects``).

    Raises:
        ValueError: an unknown name, naming the ``kind`` and the known names.
    """
    table = dict(table, **(custom_objects or {}))
    name = config.get("class_name")
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; expected one of {sorted(table)}{hint}")
    return table[name]
