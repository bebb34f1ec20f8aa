"""tf.data-style ``Options``: settings attached to a dataset with ``with_options``.

The fields TF programs set are accepted, validated and merged as in tf.data (a
dataset's options are its inputs' merged with its own; a field set later wins). Two act:
``experimental_distribute.auto_shard_policy`` tells ``lk.distribute`` how to split the
dataset across ranks, and ``autotune`` acts on the ``AUTOTUNE`` stages of the iterated
dataset: ``enabled=False`` gives them fixed settings (one worker per core, a prefetch
buffer of ``max(2, cores)``), ``cpu_budget`` bounds the cores their workers may keep busy,
``ram_budget`` the bytes a prefetch buffer may grow to. The others are recorded only:
layerkit's stages take their parallelism and order from their own arguments
(``num_parallel_calls``, ``deterministic``). No option changes an element or the element
order.
"""
from __future__ import annotations

import enum


class AutoShardPolicy(enum.IntEnum):
    """How ``lk.distribute`` splits a dataset across ranks
    (``tf.data.experimental.AutoShardPolicy``, same values).

    - ``AUTO``: by file (Parquet: by row group) when the pipeline reads files and has at
      least one file (row group) per rank, else ``DATA``.
    - ``FILE``: by file / row group; an error if the pipeline reads no files.
    - ``DATA``: every rank runs the pipeline and keeps its own part of each global batch.
    - ``OFF``: no sharding: every rank reads everything.
    - ``HINT``: tf.data's shard-hint mode (not supported by ``lk.distribute``: an error).
    """

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class _OptionsBase:
    """Fixed fields with defaults; setting an unknown field raises, as in tf.data."""

    _fields: dict = {}

    def __init__(self) -> None:
        for k, v in self._fields.items():
            object.__setattr__(self, k, v() if isinstance(v, type) else v)

    def __setattr__(self, name: str, value) -> None:
        if name not in self._fields:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}; known: "
                                 f"{sorted(self._fields)}")
        object.__setattr__(self, name, value)

    def _merge(self, other: _OptionsBase) -> None:
        """Take every field ``other`` set (differs from the default)."""
        fresh = type(other)()
        for k in self._fields:
            mine, theirs = getattr(self, k), getattr(other, k)
            if isinstance(theirs, _OptionsBase):
                mine._merge(theirs)
            elif theirs != getattr(fresh, k):
                object.__setattr__(self, k, theirs)

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and all(
            getattr(self, k) == getattr(other, k) for k in self._fields)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({body})"


class ThreadingOptions(_OptionsBase):
    _fields = {"max_intra_op_parallelism": None, "private_threadpool_size": None}


class AutotuneOptions(_OptionsBase):
    """``tf.data.experimental.AutotuneOptions``: ``enabled`` (None/True: AUTOTUNE
    measures and decides), ``cpu_budget`` (cores), ``ram_budget`` (bytes);
    ``autotune_algorithm`` is recorded only."""

    _fields = {"enabled": None, "cpu_budget": None, "ram_budget": None,
               "autotune_algorithm": None}


class OptimizationOptions(_OptionsBase):
    _fields = {"apply_default_optimizations": None, "map_and_batch_fusion": None,
               "map_parallelization": None, "parallel_batch": None, "noop_elimination": None,
               "shuffle_and_repeat_fusion": None, "inject_prefetch": None,
               "filter_parallelization": None}


class DistributeOptions(_OptionsBase):
    """``Options().experimental_distribute``: ``auto_shard_policy`` (default ``AUTO``),
    read by ``lk.distribute``; ``num_devices`` is recorded only."""

    _fields = {"auto_shard_policy": AutoShardPolicy.AUTO, "num_devices": None}

    def __setattr__(self, name: str, value) -> None:
        if name == "auto_shard_policy":
            try:
                value = AutoShardPolicy(value)
            except ValueError:
                raise ValueError(f"DistributeOptions.auto_shard_policy must be an lk.data."
                                 f"experimental.AutoShardPolicy, received {value!r}") from None
        super().__setattr__(name, value)


class Options(_OptionsBase):
    """Dataset options, as ``tf.data.Options``.

    Examples:
        >>> import layerkit as lk
        >>> opts = lk.data.Options()
        >>> opts.deterministic = False
        >>> ds = lk.data.Dataset.range(3).with_options(opts)
        >>> ds.options().deterministic
        False
    """

    _fields = {"deterministic": None, "experimental_deterministic": None,
               "experimental_slack": None, "experimental_external_state_policy": None,
               "experimental_warm_start": None, "experimental_symbolic_checkpoint": None,
               "threading": ThreadingOptions, "autotune": AutotuneOptions,
               "experimental_optimization": OptimizationOptions,
               "experimental_distribute": DistributeOptions}

    def __setattr__(self, name: str, value) -> None:
        if name in ("deterministic", "experimental_deterministic") and value is not None \
                and not isinstance(value, bool):
            raise TypeError(f"Options.{name} must be a bool or None, received "
                            f"{type(value).__name__}")
        super().__setattr__(name, value)
        if name == "experimental_deterministic":  # the older name of the same option
            object.__setattr__(self, "deterministic", value)
        elif name == "deterministic":
            object.__setattr__(self, "experimental_deterministic", value)

    def merge(self, options: Options) -> Options:
        """A new Options: these, with every field that ``options`` set taking over."""
        if not isinstance(options, Options):
            raise TypeError(f"Options.merge: expected Options, received "
                            f"{type(options).__name__}")
        out = Options()
        out._merge(self)
        out._merge(options)
        return out
