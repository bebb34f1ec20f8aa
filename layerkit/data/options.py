"""``lk.data.Options``: settings attached to a pipeline with ``Dataset.with_options``.

As in tf.data, options belong to the whole dataset, not to one stage: ``ds.options()``
merges those given anywhere in the pipeline (an option set later, closer to the
consumer, wins). The one group layerkit reads today is ``experimental_distribute``
(how ``lk.distribute`` shards the dataset across ranks).

    >>> import layerkit as lk
    >>> options = lk.data.Options()
    >>> options.experimental_distribute.auto_shard_policy = (
    ...     lk.data.experimental.AutoShardPolicy.DATA)
    >>> ds = lk.data.Dataset.range(8).batch(4).with_options(options)
    >>> ds.options().experimental_distribute.auto_shard_policy
    <AutoShardPolicy.DATA: 2>
"""
from __future__ import annotations

import enum

from layerkit.data.node import Node

__all__ = ["Options", "DistributeOptions", "AutoShardPolicy", "OptionsNode"]


class AutoShardPolicy(enum.IntEnum):
    """How ``lk.distribute`` splits a dataset across ranks (tf.data's values).

    - ``AUTO``: by file (Parquet: by row group) when the pipeline reads files and has at
      least one file (row group) per rank, else ``DATA``.
    - ``FILE``: by file / row group; an error if the pipeline reads no files.
    - ``DATA``: every rank runs the pipeline and keeps its own part of each global batch.
    - ``OFF``: no sharding: every rank reads everything.
    - ``HINT``: tf.data's shard-hint mode (not supported: an error).
    """

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class _Group:
    """A group of options: only the declared names can be set (typos are errors)."""

    _fields: dict = {}

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {})

    def __getattr__(self, name: str):
        fields = type(self)._fields
        if name in fields:
            return self._values.get(name, fields[name])
        raise AttributeError(f"{type(self).__name__} has no option {name!r}; options are "
                             f"{sorted(fields)}")

    def __setattr__(self, name: str, value) -> None:
        if name not in type(self)._fields:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}; options "
                                 f"are {sorted(type(self)._fields)}")
        self._values[name] = self._check(name, value)

    def _check(self, name: str, value):
        return value

    def _merge(self, other: _Group) -> None:
        """Take ``other``'s explicitly set values (they win)."""
        for k, v in other._values.items():
            if isinstance(v, _Group):
                mine = self._values.get(k)
                if mine is None:
                    mine = self._values[k] = type(v)()
                mine._merge(v)
            else:
                self._values[k] = v

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._values == other._values

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"


class DistributeOptions(_Group):
    """``Options().experimental_distribute``: ``auto_shard_policy`` (default AUTO)."""

    _fields = {"auto_shard_policy": AutoShardPolicy.AUTO, "num_devices": None}

    def _check(self, name: str, value):
        if name == "auto_shard_policy":
            try:
                return AutoShardPolicy(value)
            except ValueError:
                raise ValueError(f"auto_shard_policy must be an lk.data.experimental."
                                 f"AutoShardPolicy, received {value!r}") from None
        return value


class Options(_Group):
    """Options of a dataset (tf.data's ``Options``); set attributes, then
    ``ds.with_options(options)``.

    Attributes:
        experimental_distribute: :class:`DistributeOptions` (``auto_shard_policy``).
        deterministic: accepted for compatibility (layerkit's stages are deterministic
            unless a map or interleave says ``deterministic=False``).
    """

    _fields = {"experimental_distribute": None, "deterministic": None}

    def __getattr__(self, name: str):
        if name == "experimental_distribute":
            v = self._values.get(name)
            if v is None:
                v = self._values[name] = DistributeOptions()
            return v
        return super().__getattr__(name)

    def _check(self, name: str, value):
        if name == "experimental_distribute" and not isinstance(value, DistributeOptions):
            raise TypeError(f"Options.experimental_distribute must be a DistributeOptions, "
                            f"received {type(value).__name__}")
        return value

    def merge(self, other: Options) -> Options:
        """A new Options: these, overridden by what ``other`` sets."""
        if not isinstance(other, Options):
            raise TypeError(f"Options.merge expects Options, received {type(other).__name__}")
        out = Options()
        out._merge(self)
        out._merge(other)
        return out


class OptionsNode(Node):
    """Carries Options; iterating it is iterating its input (no stage of its own)."""

    name = "with_options"

    def __init__(self, source: Node, options: Options) -> None:
        if not isinstance(options, Options):
            raise TypeError(f"Dataset.with_options expects lk.data.Options, received "
                            f"{type(options).__name__}")
        super().__init__(source)
        self.options = options

    def make_iterator(self, ctx):
        return self.inputs[0].make_iterator(ctx)

    def cardinality(self) -> int:
        return self.inputs[0].cardinality()

    def _compute_spec(self):
        return self.inputs[0].element_spec()

    def static_chunk_spec(self):
        return self.inputs[0].static_chunk_spec()


def merged_options(node: Node) -> Options:
    """The options of the pipeline ending at ``node`` (outer settings win)."""
    found = []
    stack = [node]
    seen = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, OptionsNode):
            found.append(n.options)
        stack.extend(n.inputs)
    out = Options()
    for o in reversed(found):   # innermost first, so outer ones override
        out._merge(o)
    return out
