"""TensorFlow's error classes (``lk.errors.InvalidArgumentError``, ...).

Each class is a subclass of :class:`OpError` and of the Python exception with the same
meaning, so ``except lk.errors.NotFoundError`` and ``except FileNotFoundError`` both
catch a missing file, and code written for either spelling keeps working:

=========================  ==============================  =====
class                      also a                          code
=========================  ==============================  =====
CancelledError             (OpError only)                  1
UnknownError               (OpError only)                  2
InvalidArgumentError       ValueError                      3
DeadlineExceededError      TimeoutError                    4
NotFoundError              FileNotFoundError               5
AlreadyExistsError         FileExistsError                 6
PermissionDeniedError      PermissionError                 7
ResourceExhaustedError     MemoryError                     8
FailedPreconditionError    RuntimeError                    9
AbortedError               RuntimeError                    10
OutOfRangeError            IndexError                      11
UnimplementedError         NotImplementedError             12
InternalError              RuntimeError                    13
UnavailableError           RuntimeError                    14
DataLossError              OSError                         15
UnauthenticatedError       PermissionError                 16
=========================  ==============================  =====

layerkit raises them where TensorFlow does; for example ``iterator.get_next()`` past
the end of a dataset raises :class:`OutOfRangeError` (``next(iterator)`` raises
``StopIteration``, as in TensorFlow), and a missing checkpoint :class:`NotFoundError`.

Examples:
    >>> import layerkit as lk
    >>> it = iter(lk.data.Dataset.range(1))
    >>> int(it.get_next())
    0
    >>> try:
    ...     it.get_next()
    ... except lk.errors.OutOfRangeError as e:
    ...     print(e.error_code == lk.errors.OUT_OF_RANGE)
    True

This module imports nothing from layerkit, so every layer of the library may raise
these errors.
"""
from __future__ import annotations

from typing import Any

OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, \
    PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, \
    UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED = range(17)


class OpError(Exception):
    """The base of TensorFlow's runtime errors.

    Constructed as in TensorFlow, ``OpError(node_def, op, message, error_code)``, or with
    the message alone: ``InvalidArgumentError("bad shape")`` (subclasses fill in their
    ``error_code``).

    Attributes:
        message: the error message.
        op: the op that failed, or None (layerkit has no graph op objects in eager code).
        node_def: None.
        error_code: the ``lk.errors`` code (``lk.errors.INVALID_ARGUMENT``, ...).
        experimental_payloads: an empty dict (TensorFlow's status payloads).
    """

    _code = UNKNOWN

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = ("node_def", "op", "message", "error_code")
        if len(args) + len(kwargs) <= 1 and not kwargs.keys() - {"message"}:
            fields = {"message": args[0] if args else kwargs.get("message", "")}
        else:
            if len(args) > len(names):
                raise TypeError(f"{type(self).__name__}: takes (node_def, op, message, "
                                f"error_code) or a message alone; received {len(args)} "
                                f"positional arguments")
            fields = dict(zip(names, args))
            extra = kwargs.keys() - set(names) - {"experimental_payloads"}
            if extra:
                raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                                f"{sorted(extra)}")
            fields.update({k: v for k, v in kwargs.items() if k in names})
        self._message = str(fields.get("message", ""))
        self.op = fields.get("op")
        self.node_def = fields.get("node_def")
        if fields.get("error_code") is not None:
            self._error_code = int(fields["error_code"])
        self._payloads = dict(kwargs.get("experimental_payloads") or {})
        super().__init__(self._message)

    # Properties with defaults: subclasses that also derive from another layerkit error
    # (a missing checkpoint is a CheckpointError and a NotFoundError) may not run
    # OpError.__init__.
    op = None
    node_def = None

    @property
    def message(self) -> str:
        return self.__dict__.get("_message", None) or str(self)

    @property
    def error_code(self) -> int:
        return self.__dict__.get("_error_code", type(self)._code)

    @property
    def experimental_payloads(self) -> dict:
        return self.__dict__.get("_payloads", {})

    def __str__(self) -> str:
        if "_message" in self.__dict__:
            return self._message
        return super().__str__()


def _error(name: str, code: int, base: type | None, doc: str) -> type:
    bases = (OpError,) if base is None else (OpError, base)
    return type(name, bases, {"_code": code, "__doc__": doc, "__module__": __name__})


CancelledError = _error("CancelledError", CANCELLED, None,
                        "An operation was cancelled (a closed iterator or pool).")
UnknownError = _error("UnknownError", UNKNOWN, None, "An error of unknown kind.")
InvalidArgumentError = _error(
    "InvalidArgumentError", INVALID_ARGUMENT, ValueError,
    "An op received an invalid argument (a value, shape or index); also a ValueError.")
DeadlineExceededError = _error("DeadlineExceededError", DEADLINE_EXCEEDED, TimeoutError,
                               "A deadline expired; also a TimeoutError.")
NotFoundError = _error("NotFoundError", NOT_FOUND, FileNotFoundError,
                       "A file or other entity was not found; also a FileNotFoundError.")
AlreadyExistsError = _error("AlreadyExistsError", ALREADY_EXISTS, FileExistsError,
                            "An entity to be created already exists; also a FileExistsError.")
PermissionDeniedError = _error("PermissionDeniedError", PERMISSION_DENIED, PermissionError,
                               "No permission for an operation; also a PermissionError.")
ResourceExhaustedError = _error("ResourceExhaustedError", RESOURCE_EXHAUSTED, MemoryError,
                                "Memory or another resource ran out; also a MemoryError.")
FailedPreconditionError = _error(
    "FailedPreconditionError", FAILED_PRECONDITION, RuntimeError,
    "The system is not in a state the operation needs (an unread or uninitialized "
    "value); also a RuntimeError.")
AbortedError = _error("AbortedError", ABORTED, RuntimeError,
                      "An operation was aborted; also a RuntimeError.")
OutOfRangeError = _error(
    "OutOfRangeError", OUT_OF_RANGE, IndexError,
    "An operation went past the valid range, e.g. ``iterator.get_next()`` after the "
    "last element; also an IndexError (``next(iterator)`` raises StopIteration instead, "
    "as in TensorFlow).")
UnimplementedError = _error("UnimplementedError", UNIMPLEMENTED, NotImplementedError,
                            "The operation is not implemented or supported; also a "
                            "NotImplementedError.")
InternalError = _error("InternalError", INTERNAL, RuntimeError,
                       "An internal invariant broke; also a RuntimeError.")
UnavailableError = _error("UnavailableError", UNAVAILABLE, RuntimeError,
                          "A service is unavailable; also a RuntimeError.")
DataLossError = _error("DataLossError", DATA_LOSS, OSError,
                       "Unrecoverable data loss or corruption; also an OSError.")
UnauthenticatedError = _error("UnauthenticatedError", UNAUTHENTICATED, PermissionError,
                              "No valid credentials; also a PermissionError.")

_BY_CODE = {c._code: c for c in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
    NotFoundError, AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError,
    FailedPreconditionError, AbortedError, OutOfRangeError, UnimplementedError,
    InternalError, UnavailableError, DataLossError, UnauthenticatedError)}


def exception_type_from_error_code(error_code: int) -> type:
    """The error class for an ``lk.errors`` code (``3`` -> InvalidArgumentError).

    Raises:
        KeyError: ``error_code`` is not one of the codes 1..16.
    """
    try:
        return _BY_CODE[int(error_code)]
    except KeyError:
        raise KeyError(f"exception_type_from_error_code: unknown error code "
                       f"{error_code!r}; expected 1..16") from None


def error_code_from_exception_type(cls: type) -> int:
    """The ``lk.errors`` code of an error class (InvalidArgumentError -> 3)."""
    return cls._code
