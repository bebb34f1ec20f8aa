"""``lk.summary``: TensorFlow's ``tf.summary`` for TensorBoard logs from custom loops.

Make a writer with :func:`create_file_writer`, make it the default
(``with writer.as_default(step):`` or ``writer.set_as_default()``), then log with
:func:`scalar`, :func:`histogram`, :func:`text` and :func:`image`; each returns a bool
Tensor, False when there is no default writer or :func:`record_if` says no. The step
comes from the ``step`` argument or ``lk.summary.experimental.set_step``. Inside
``lk.function`` every call writes (each summary is a stateful graph node). Files are
TensorBoard event files written by :mod:`layerkit.io.tfevents` as TensorFlow writes them;
``trace_on`` (graph and profiler traces) is not available.

Examples:
    >>> import tempfile, layerkit as lk
    >>> writer = lk.summary.create_file_writer(tempfile.mkdtemp())
    >>> with writer.as_default():
    ...     for step in range(3):
    ...         _ = lk.summary.scalar("loss", 1.0 / (step + 1), step=step)
    >>> writer.close()
"""
from layerkit.summary import experimental
from layerkit.summary._summary import (
    SummaryWriter,
    create_file_writer,
    create_noop_writer,
    flush,
    histogram,
    image,
    record_if,
    scalar,
    should_record_summaries,
    text,
    trace_export,
    trace_off,
    trace_on,
)

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "scalar", "histogram",
           "text", "image", "record_if", "should_record_summaries", "flush", "trace_on",
           "trace_off", "trace_export", "experimental"]
