"""The state, writers and summary ops behind ``lk.summary`` (TensorFlow's ``tf.summary``).

Events go through :class:`layerkit.io.tfevents.EventFileWriter`, the writer that
``lk.callbacks.TensorBoard`` uses, as the tensor summaries TensorFlow writes (a
``TensorProto`` with the TensorBoard plugin named in ``SummaryMetadata``).

The default writer, the default step and the ``record_if`` condition are per thread, as in
TensorFlow. Inside an ``lk.function`` trace each summary call is one stateful graph node
(like random draws and metric updates): it runs, and writes, on every call of the
function, reading a Tensor or Variable step and a Tensor ``record_if`` condition at that
call. A Python step or condition is fixed when the function is traced, as in TensorFlow.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerkit._core import context
from layerkit._core.context import get_current_name_scope, name_scope
from layerkit._core.effects import python_call
from layerkit._core.op import wrap
from layerkit._core.tensor import Tensor
from layerkit._core.types import PathLike, TensorLike
from layerkit.io import tfevents
from layerkit.utils.image_utils import encode_png

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "scalar", "histogram",
           "text", "image", "record_if", "should_record_summaries", "flush", "trace_on",
           "trace_off", "trace_export", "set_step", "get_step", "summary_scope"]

#: a summary step: an int, an integer Tensor or Variable (read when written), or None.
StepLike = int | Tensor | None
_NO_STEP = ("No step set. Please specify one either through the `step` argument or "
            "through lk.summary.experimental.set_step()")


class _State(threading.local):
    """Per-thread summary state: default writer, default step, record_if condition."""

    def __init__(self) -> None:
        self.writer: SummaryWriter | None = None
        self.step: StepLike = None
        self.is_recording: Any = True  # a bool, a bool Tensor or a callable returning one


_STATE = _State()


# ---- writers ----------------------------------------------------------------------------
class SummaryWriter:
    """Base class of summary writers (``tf.summary.SummaryWriter``).

    ``with writer.as_default(step):`` makes it the default writer (and ``step`` the
    default step) inside the block, flushing it on a normal exit; ``set_as_default``
    does so for good. Summary ops write to the default writer.
    """

    def set_as_default(self, step: StepLike = None) -> None:
        """Make this the default writer (and ``step``, if given, the default step) for
        the rest of the current thread."""
        self._check_open()
        _STATE.writer = self
        if step is not None:
            _STATE.step = step

    @contextlib.contextmanager
    def as_default(self, step: StepLike = None) -> Iterator[SummaryWriter]:
        """A context in which this is the default writer (and ``step``, if given, the
        default step); both are restored on exit, and the writer is flushed on a normal
        exit.

        Raises:
            RuntimeError: the writer is closed.
        """
        self._check_open()
        old_writer, old_step = _STATE.writer, _STATE.step
        try:
            _STATE.writer = self
            if step is not None:
                _STATE.step = step
            yield self
            self.flush()
        finally:
            _STATE.writer = old_writer
            if step is not None:
                _STATE.step = old_step

    def init(self) -> None:
        """Nothing to do: layerkit writers are ready when created (TF API parity)."""

    def flush(self) -> None:
        """Write buffered events to disk."""

    def close(self) -> None:
        """Flush and close the writer; it cannot be made the default afterwards."""

    def _check_open(self) -> None:
        pass


class _FileWriter(SummaryWriter):
    """A summary writer appending to one ``events.out.tfevents.*`` file in ``logdir``."""

    def __init__(self, logdir, max_queue: int | None, flush_millis: int | None,
                 filename_suffix: str | None) -> None:
        self.logdir = os.fspath(logdir)
        self.max_queue = 10 if max_queue is None else int(max_queue)
        self.flush_millis = 120_000 if flush_millis is None else int(flush_millis)
        events = tfevents.EventFileWriter(
            self.logdir, ".v2" if filename_suffix is None else filename_suffix)
        self._events: tfevents.EventFileWriter | None = events
        self.path = events.path  # the event file
        self._pending = 0
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()

    def _opened(self) -> tfevents.EventFileWriter:
        if self._events is None:
            raise RuntimeError(f"the summary writer for logdir {self.logdir!r} is already "
                               f"closed")
        return self._events

    def _check_open(self) -> None:
        self._opened()

    def _write(self, tag: str, value, step: int, plugin: str, description) -> None:
        with self._lock:
            self._opened().add_tensor(tag, value, step, plugin, description)
            self._pending += 1
            if (self._pending >= self.max_queue
                    or (time.monotonic() - self._last_flush) * 1000 >= self.flush_millis):
                self._flush()

    def _flush(self) -> None:
        self._opened().flush()
        self._pending = 0
        self._last_flush = time.monotonic()

    def flush(self) -> None:
        """Write buffered events to disk (nothing once closed)."""
        with self._lock:
            if self._events is not None:
                self._flush()

    def close(self) -> None:
        """Flush and close the event file; later writes to it raise RuntimeError (it stays
        the default writer where it was one, as in TensorFlow)."""
        with self._lock:
            if self._events is not None:
                self._events.close()
                self._events = None

    def __repr__(self) -> str:
        closed = " closed" if self._events is None else ""
        return f"<lk.summary file writer {self.logdir!r}{closed}>"


class _NoopWriter(SummaryWriter):
    """A writer that writes nothing; ``as_default`` leaves the default writer as it is."""

    def set_as_default(self, step=None) -> None:
        """Does nothing (TensorFlow's no-op writer)."""

    @contextlib.contextmanager
    def as_default(self, step=None) -> Iterator[SummaryWriter]:
        """A context that changes nothing (TensorFlow's no-op writer)."""
        yield self

    def __repr__(self) -> str:
        return "<lk.summary no-op writer>"


def create_file_writer(logdir: PathLike, max_queue: int | None = None,
                       flush_millis: int | None = None, filename_suffix: str | None = None,
                       name: str | None = None) -> SummaryWriter:
    """A summary writer for the event file TensorBoard reads (``tf.summary.create_file_writer``).

    The file ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>`` is created in
    ``logdir`` (made if needed) at once.

    Args:
        logdir: the directory of the run (``tensorboard --logdir`` its parent).
        max_queue: events buffered before a flush (default 10).
        flush_millis: longest time between flushes, in milliseconds (default 120000);
            checked at each write.
        filename_suffix: the end of the file name (default ``.v2``).
        name: unused (TensorFlow's op name).

    Returns:
        A :class:`SummaryWriter`.

    Raises:
        ValueError: ``logdir`` is None.

    Examples:
        >>> import tempfile, layerkit as lk
        >>> writer = lk.summary.create_file_writer(tempfile.mkdtemp())
        >>> with writer.as_default(step=3):
        ...     bool(lk.summary.scalar("loss", 0.25))
        True
        >>> bool(lk.summary.scalar("loss", 0.25, step=4))  # no default writer here
        False
    """
    if logdir is None:
        raise ValueError("lk.summary.create_file_writer: argument `logdir` cannot be None")
    return _FileWriter(logdir, max_queue, flush_millis, filename_suffix)


def create_noop_writer() -> SummaryWriter:
    """A writer that writes nothing (``tf.summary.create_noop_writer``): code that takes a
    writer runs with summaries off."""
    return _NoopWriter()


def flush(writer: SummaryWriter | None = None, name: str | None = None) -> None:
    """Flush ``writer``, or the default writer when None (nothing if there is none)."""
    writer = _STATE.writer if writer is None else writer
    if writer is not None:
        writer.flush()


# ---- step and recording condition -------------------------------------------------------
def set_step(step: StepLike) -> None:
    """Set the default step of summary ops in this thread (``tf.summary.experimental.set_step``).

    Args:
        step: an int, an integer Tensor or Variable (read when each summary is written,
            so ``optimizer.iterations`` follows training), or None to unset.
    """
    _STATE.step = step


def get_step() -> Any:
    """The default step set by :func:`set_step` or ``as_default(step)``, or None."""
    return _STATE.step


@contextlib.contextmanager
def record_if(condition: TensorLike) -> Iterator[None]:
    """Write summaries inside the block only when ``condition`` holds (``tf.summary.record_if``).

    Args:
        condition: a bool, a boolean scalar Tensor, or a callable returning either,
            evaluated at each summary call (inside ``lk.function``: a Tensor is read on
            every call of the function).

    Examples:
        >>> import tempfile, layerkit as lk
        >>> with lk.summary.create_file_writer(tempfile.mkdtemp()).as_default(step=0):
        ...     with lk.summary.record_if(False):
        ...         bool(lk.summary.scalar("x", 1.0))
        False
    """
    old = _STATE.is_recording
    _STATE.is_recording = condition
    try:
        yield
    finally:
        _STATE.is_recording = old


def _condition():
    """The record_if condition now: True, False or a (possibly traced) bool Tensor."""
    cond = _STATE.is_recording
    if callable(cond):
        cond = cond()
    if isinstance(cond, Tensor) and not context.tracing():
        cond = bool(np.asarray(cond._v))
    elif not isinstance(cond, Tensor):
        cond = bool(cond)
    return cond


def should_record_summaries() -> Tensor:
    """A bool Tensor: is there a default writer and does ``record_if`` allow writing."""
    if _STATE.writer is None:
        return wrap(np.array(False))
    cond = _condition()
    return cond if isinstance(cond, Tensor) else wrap(np.array(cond))


# ---- the summary ops --------------------------------------------------------------------
class _Write:
    """One summary call: what to write where; the step and condition may be op inputs."""

    __slots__ = ("writer", "tag", "prepare", "plugin", "description", "step", "has_step",
                 "has_cond")

    def __init__(self, writer, tag, prepare, plugin, description, step, has_step, has_cond):
        self.writer, self.tag, self.prepare, self.plugin = writer, tag, prepare, plugin
        self.description, self.step = description, step
        self.has_step, self.has_cond = has_step, has_cond

    def run(self, data, step=None, cond=None) -> np.ndarray:
        if cond is not None and not bool(np.asarray(cond)):
            return np.array(False)
        step = self.step if step is None else step
        self.writer._write(self.tag, self.prepare(np.asarray(data)), _int_step(step),
                           self.plugin, self.description)
        return np.array(True)

    def __repr__(self) -> str:
        return f"<summary {self.plugin} {self.tag!r}>"


def _write_forward(*arrays, call: _Write):
    data, rest = arrays[0], list(arrays[1:])
    step = rest.pop(0) if call.has_step else None
    cond = rest.pop(0) if call.has_cond else None
    return call.run(data, step, cond)




def _int_step(step) -> int:
    try:
        return int(np.asarray(step._v if isinstance(step, Tensor) else step))
    except (TypeError, ValueError) as e:
        raise TypeError(f"lk.summary: step must be an int64-castable scalar; received "
                        f"{step!r}") from e


def _write(name: str, data, step, plugin: str, prepare: Callable, description) -> Tensor:
    """Write ``prepare(data)`` under ``name`` (prefixed by the name scope) at ``step``
    to the default writer; a bool Tensor says whether it was written."""
    writer = _STATE.writer
    if writer is None:
        return wrap(np.array(False))
    cond = _condition()
    if cond is False:
        return wrap(np.array(False))
    if step is None:
        step = _STATE.step
        if step is None:
            raise ValueError(f"lk.summary ({name!r}): {_NO_STEP}")
    scope = get_current_name_scope()
    tag = f"{scope}/{name}" if scope else name
    has_cond = isinstance(cond, Tensor)  # only while tracing: a graph value
    if not (context.RECORDERS and context.tracing()):
        call = _Write(writer, tag, prepare, plugin, description, step, False, False)
        return wrap(call.run(data._v if isinstance(data, Tensor) else data))
    has_step = isinstance(step, Tensor)
    call = _Write(writer, tag, prepare, plugin, description, None if has_step else step,
                  has_step, has_cond)
    inputs = [data] + ([step] if has_step else []) + ([cond] if has_cond else [])
    # One Python-call node: never folded, merged or dropped; re-run on every graph call.
    (written,) = python_call(lambda *arrays: (_write_forward(*arrays, call=call),), inputs,
                             name=f"lk.summary {plugin} {tag!r}")
    return written


def _array(data) -> np.ndarray:
    """The value to validate (rank, dtype): a check, not a use, so the traced read is
    ``_rv`` (the node reads the real value when it runs)."""
    return np.asarray(data._rv if isinstance(data, Tensor) else data)


def scalar(name: str, data: Any, step: StepLike = None, description: str | None = None) -> Tensor:
    """Write a scalar summary (``tf.summary.scalar``): a float32 value under ``name``.

    Args:
        name: the tag (prefixed by the current ``lk.name_scope``).
        data: a real scalar (Python number, 0-d array or Tensor).
        step: the step (an int or integer Tensor/Variable); default
            ``lk.summary.experimental.get_step()``.
        description: shown in TensorBoard.

    Returns:
        A bool Tensor: True if written, False without a default writer or when
        ``record_if`` says no.

    Raises:
        ValueError: ``data`` is not a scalar, or no step is given or set.
    """
    if np.ndim(_array(data)) != 0:
        raise ValueError(f"lk.summary.scalar ({name!r}): data must be a scalar (rank 0); "
                         f"received shape {np.shape(_array(data))}")
    return _write(name, data, step, "scalars", lambda a: a.astype(np.float32), description)


def text(name: str, data: Any, step: StepLike = None, description: str | None = None) -> Tensor:
    """Write a text summary (``tf.summary.text``): a string, or a string array shown as a
    table; Markdown is rendered by TensorBoard.

    Args:
        name: the tag; data: a str/bytes, or an array or Tensor of them; step,
        description: as in :func:`scalar`.

    Returns:
        A bool Tensor: True if written.

    Raises:
        TypeError: ``data`` is not of strings.
        ValueError: no step is given or set.
    """
    a = _array(data)
    if a.dtype.kind not in "USO" or (a.dtype.kind == "O" and not all(
            isinstance(x, (str, bytes)) for x in a.ravel())):
        raise TypeError(f"lk.summary.text ({name!r}): data must be a string tensor; "
                        f"received dtype {a.dtype}")
    return _write(name, data, step, "text", lambda v: v, description)


def _histogram_buckets(data: np.ndarray, buckets) -> np.ndarray:
    """TensorBoard's ``[k, 3]`` float64 histogram of (left edge, right edge, count)."""
    k = max(0, int(buckets))
    v = np.asarray(data, dtype=np.float64).ravel()
    if v.size == 0 or k == 0:
        return np.zeros((k, 3))
    lo, hi = v.min(), v.max()
    if hi == lo:  # one value: every edge is it, the last bucket counts everything
        counts = np.zeros(k)
        counts[-1] = v.size
        return np.stack([np.full(k, lo), np.full(k, lo), counts], axis=1)
    width = (hi - lo) / k
    index = np.minimum(np.floor((v - lo) / width).astype(np.int64), k - 1)
    edges = np.linspace(lo, hi, k + 1)
    edges[-1] = hi
    return np.stack([edges[:-1], edges[1:], np.bincount(index, minlength=k).astype(np.float64)],
                    axis=1)


def histogram(name: str, data: Any, step: StepLike = None, buckets: int | None = None,
              description: str | None = None) -> Tensor:
    """Write a histogram summary (``tf.summary.histogram``) of all of ``data``'s elements.

    ``buckets`` (default 30) equal-width buckets span min..max, the last one closed;
    TensorBoard's ``[k, 3]`` tensor of (left edge, right edge, count) is written. Empty
    data gives ``buckets`` all-zero rows; data of one value gives buckets whose edges are
    all that value, the last holding the count.

    Args:
        name, step, description: as in :func:`scalar`.
        data: any numeric array or Tensor.
        buckets: the number of buckets (a negative number counts as 0).

    Returns:
        A bool Tensor: True if written.

    Raises:
        TypeError: ``buckets`` is not an int.
        ValueError: no step is given or set.
    """
    if buckets is None:
        buckets = 30
    if isinstance(buckets, bool) or not isinstance(buckets, (int, np.integer)):
        raise TypeError(f"lk.summary.histogram ({name!r}): buckets must be an int; received "
                        f"{buckets!r}")
    return _write(name, data, step, "histograms",
                  lambda a: _histogram_buckets(a, buckets), description)


def _to_uint8(images: np.ndarray) -> np.ndarray:
    """``tf.image.convert_image_dtype(images, tf.uint8, saturate=True)``."""
    if images.dtype == np.uint8:
        return images
    if images.dtype.kind == "f":
        return np.clip(images.astype(np.float64) * 255.5, 0, 255).astype(np.uint8)
    if images.dtype.kind in "iu":
        scale = (int(np.iinfo(images.dtype).max) + 1) // 256
        return np.clip(images // scale, 0, 255).astype(np.uint8)
    raise TypeError(f"lk.summary.image: data must be a float or integer image tensor; "
                    f"received dtype {images.dtype}")


def _encode_images(data: np.ndarray, max_outputs: int) -> np.ndarray:
    if data.ndim != 4:
        raise ValueError(f"lk.summary.image: data must have rank 4 ([k, h, w, c]); received "
                         f"shape {data.shape}")
    images = _to_uint8(data)
    pngs = [encode_png(img) for img in images[:max_outputs]]
    return np.array([str(data.shape[2]).encode(), str(data.shape[1]).encode(), *pngs],
                    dtype=object)


def image(name: str, data: Any, step: StepLike = None, max_outputs: int = 3,
          description: str | None = None) -> Tensor:
    """Write an image summary (``tf.summary.image``): up to ``max_outputs`` PNG images.

    Args:
        name, step, description: as in :func:`scalar`.
        data: ``[k, h, w, c]`` images, c = 1 (gray), 3 (RGB) or 4 (RGBA); floats in
            [0, 1] (scaled by 255.5 and clipped, as ``tf.image.convert_image_dtype``) or
            integers (uint8 as they are).
        max_outputs: how many of the first images to write.

    Returns:
        A bool Tensor: True if written.

    Raises:
        ValueError: ``max_outputs`` is negative, no step is given or set, or (when
            written) ``data`` is not rank 4.
    """
    if int(max_outputs) < 0:
        raise ValueError(f"lk.summary.image ({name!r}): max_outputs must be >= 0; received "
                         f"{max_outputs}")
    return _write(name, data, step, "images",
                  lambda a: _encode_images(a, int(max_outputs)), description)


@contextlib.contextmanager
def summary_scope(name: str, default_name: str | None = None, values: Any = None
                  ) -> Iterator[tuple[str, str]]:
    """``(tag, scope)`` for a custom summary op (``tf.summary.experimental.summary_scope``):
    the tag is ``name`` under the current name scope, and a name scope is opened."""
    name = name or default_name
    current = get_current_name_scope()
    tag = f"{current}/{name}" if current else name
    with name_scope(name) as scope:
        yield tag, scope


# ---- tracing (graphs and profiles): not available ---------------------------------------
def trace_on(graph: bool = True, profiler: bool = False,
             profiler_outdir: PathLike | None = None) -> None:
    """Not available: layerkit has no TensorFlow graph or profiler to trace.

    Raises:
        NotImplementedError: always; write a model's layer graph with
            ``lk.callbacks.TensorBoard(write_graph=True)`` instead.
    """
    raise NotImplementedError(
        "lk.summary.trace_on: tracing TensorFlow graphs and profiles is not available in "
        "layerkit; lk.callbacks.TensorBoard(write_graph=True) writes a model's layer graph")


def trace_off() -> None:
    """Stop tracing: nothing to do, since :func:`trace_on` never starts it."""


def trace_export(name: str, step: StepLike = None,
                 profiler_outdir: PathLike | None = None) -> None:
    """Export a trace: as in TensorFlow without ``trace_on``, warn and write nothing."""
    warnings.warn("lk.summary.trace_export: no trace to export (lk.summary.trace_on is not "
                  "available in layerkit)", stacklevel=2)
