"""``lk.config``: TensorFlow's runtime configuration, mapped onto a CPU-only NumPy runtime.

* Devices: the one device is the CPU (``/physical_device:CPU:0``, logical
  ``/device:CPU:0``); GPU/TPU listings are empty, so TF code that configures GPUs when
  it finds some (``for gpu in list_physical_devices('GPU'): ...``) runs unchanged.
  ``set_visible_devices`` accepts CPU devices and an empty list for other types.
* Threads: ``threading.set_intra_op_parallelism_threads(n)`` sets the threads one op
  may use: NumPy's BLAS pool (OpenBLAS or MKL, set through the library NumPy loaded),
  numexpr's pool and layerkit's own kernel threads (``lk.nn`` elementwise kernels);
  ``0`` restores the defaults. ``set_inter_op_parallelism_threads`` is recorded only:
  layerkit runs the ops of one Python thread one after another.
* ``experimental.enable_op_determinism()`` is accepted and does nothing: layerkit's CPU
  ops are deterministic already (fixed reduction order; random ops follow their seeds).

:func:`device` (``lk.device``) accepts device names and runs the block on the CPU.

* Memory: :func:`tune_malloc` (opt-in) keeps freed large arrays in glibc's heap for
  reuse: taping ``x*x + x`` on (256, 256) float32 measured 92 -> 24 us per op;
  :func:`restore_malloc_defaults` undoes it.
* CPython tricks: :func:`tricks_enabled` says whether layerkit's CPython-specific speed
  tricks are on (``LAYERKIT_NO_TRICKS=1`` before ``import layerkit`` turns them off;
  see ``layerkit._core.tricks``).
"""
from __future__ import annotations

import contextlib
import ctypes
import re
from typing import Any, NamedTuple

from layerkit import errors
from layerkit._core import context, tricks
from layerkit._core.memory import restore_malloc_defaults, tune_malloc

__all__ = ["PhysicalDevice", "LogicalDevice", "list_physical_devices",
           "list_logical_devices", "get_visible_devices", "set_visible_devices",
           "get_logical_device_configuration", "set_logical_device_configuration",
           "get_soft_device_placement", "set_soft_device_placement", "run_functions_eagerly",
           "functions_run_eagerly", "threading",
           "experimental", "optimizer", "device", "tune_malloc", "restore_malloc_defaults",
           "tricks_enabled"]


class PhysicalDevice(NamedTuple):
    """A device of the machine: ``PhysicalDevice(name='/physical_device:CPU:0',
    device_type='CPU')``."""
    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """A device ops run on: ``LogicalDevice(name='/device:CPU:0', device_type='CPU')``."""
    name: str
    device_type: str


_CPU = PhysicalDevice("/physical_device:CPU:0", "CPU")
_CPU_LOGICAL = LogicalDevice("/device:CPU:0", "CPU")
_KNOWN_TYPES = ("CPU", "GPU", "TPU", "XLA_CPU", "XLA_GPU", "TPU_SYSTEM")
_STATE: dict[str, Any] = {"visible": [_CPU], "soft_placement": True, "intra": 0, "inter": 0,
                          "determinism": False, "tf32": True, "jit": False, "optimizer_options": {}}


def _type(device_type, who: str) -> str | None:
    if device_type is None:
        return None
    if not isinstance(device_type, str):
        raise ValueError(f"{who}: device_type must be a string such as 'CPU' or 'GPU', "
                         f"received {device_type!r}")
    return device_type.upper()


def list_physical_devices(device_type: str | None = None) -> list:
    """The machine's devices of ``device_type`` (all if None): the CPU only.

    Examples:
        >>> import layerkit as lk
        >>> lk.config.list_physical_devices("GPU")
        []
    """
    t = _type(device_type, "list_physical_devices")
    return [_CPU] if t in (None, "CPU") else []


def list_logical_devices(device_type: str | None = None) -> list:
    """The devices ops run on, of ``device_type`` (all if None): the CPU only."""
    t = _type(device_type, "list_logical_devices")
    return [_CPU_LOGICAL] if t in (None, "CPU") else []


def get_visible_devices(device_type: str | None = None) -> list:
    """The physical devices made visible by :func:`set_visible_devices` (the CPU)."""
    t = _type(device_type, "get_visible_devices")
    return [d for d in _STATE["visible"] if t is None or d.device_type == t]


def set_visible_devices(devices: Any, device_type: str | None = None) -> None:
    """Choose the visible devices (TensorFlow's call; the CPU always stays in use).

    Args:
        devices: a PhysicalDevice or a list of them, from :func:`list_physical_devices`
            (``[]`` hides all devices of ``device_type``, e.g. the GPUs there are none of).
        device_type: the type the call applies to (default: every type).

    Raises:
        ValueError: a device is not one :func:`list_physical_devices` lists, or the call
            would hide the CPU (as in TensorFlow, the CPU cannot be hidden).
    """
    t = _type(device_type, "set_visible_devices")
    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    devices = list(devices)
    for d in devices:
        if d not in list_physical_devices():
            raise ValueError(f"set_visible_devices: unrecognized device {d!r}; expected "
                             f"devices from lk.config.list_physical_devices() "
                             f"({list_physical_devices()})")
    if t in (None, "CPU") and _CPU not in devices:
        raise ValueError("set_visible_devices: CPU devices cannot be hidden (layerkit "
                         "runs every op on the CPU)")
    _STATE["visible"] = [_CPU]


def get_logical_device_configuration(device: Any) -> None:
    """Logical device configuration of ``device``: None (no virtual devices)."""
    return None


def set_logical_device_configuration(device: Any, logical_devices: Any) -> None:
    """Accepted for the CPU with one logical device; layerkit has no virtual devices.

    Raises:
        ValueError: ``device`` is not the CPU, or more than one logical device is asked
            for (layerkit cannot split the CPU into several devices).
    """
    if device != _CPU:
        raise ValueError(f"set_logical_device_configuration: unrecognized device "
                         f"{device!r}; the only device is {_CPU}")
    if logical_devices is not None and len(list(logical_devices)) > 1:
        raise ValueError("set_logical_device_configuration: layerkit does not split the "
                         "CPU into several logical devices")


def get_soft_device_placement() -> bool:
    """Whether ops asked for on an absent device run on the CPU (default True)."""
    return _STATE["soft_placement"]


def set_soft_device_placement(enabled: bool) -> None:
    """Let ops placed with :func:`device` on a GPU/TPU run on the CPU (True, the
    default), or make such a placement raise ``lk.errors.InvalidArgumentError``."""
    _STATE["soft_placement"] = bool(enabled)


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every ``lk.function`` call run its Python function eagerly (True) instead of
    the traced graph, as ``tf.config.run_functions_eagerly``: for debugging with
    ``print`` and a debugger. ``Model.fit`` steps follow it too. False (the default)
    goes back to graphs."""
    context.FUNCTIONS_EAGERLY[0] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether :func:`run_functions_eagerly` is on."""
    return context.FUNCTIONS_EAGERLY[0]


experimental_run_functions_eagerly = run_functions_eagerly  # TF's deprecated spelling


def tricks_enabled() -> bool:
    """Whether layerkit's CPython-specific speed tricks are on.

    They are on unless the environment variable ``LAYERKIT_NO_TRICKS`` was set (to
    anything but ``""``, ``"0"`` or ``"false"``) before ``import layerkit``; it is read
    once then. With them off every trick takes its plain code path: same results,
    somewhat slower (the tricks and their measured gains are listed in
    ``layerkit._core.tricks``, whose ``ACTIVE`` says which apply on this interpreter).

    Returns:
        True if the tricks are switched on.

    Examples:
        >>> import layerkit as lk
        >>> isinstance(lk.config.tricks_enabled(), bool)
        True
    """
    return tricks.ENABLED


# ---- threads ------------------------------------------------------------------------------
_BLAS_NAMES = {  # (set, get) function names of the BLAS libraries NumPy ships with
    "openblas": (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                 ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
                 ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
                 ("openblas_set_num_threads", "openblas_get_num_threads")),
    "mkl_rt": (("MKL_Set_Num_Threads", "MKL_Get_Max_Threads"),),
}
_BLAS: list = []       # [(set, get)] once looked up; [None] if there is none to drive
_SAVED: dict = {}      # pool -> its thread count before the first change


def _blas():
    """``(set_num_threads, get_num_threads)`` of the BLAS library NumPy loaded, or None."""
    if _BLAS:
        return _BLAS[0]
    found = None
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/" in line}
    except OSError:  # not Linux: BLAS threads stay as the environment set them
        paths = set()
    for path in sorted(paths):
        base = path.rsplit("/", 1)[-1]
        for key, names in _BLAS_NAMES.items():
            if key not in base:
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for set_name, get_name in names:
                setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
                if setter is not None and getter is not None:
                    setter.restype, getter.restype = None, ctypes.c_int
                    found = (setter, getter)
                    break
            if found:
                break
        if found:
            break
    _BLAS.append(found)
    return found


def blas_threads() -> int | None:
    """The number of threads NumPy's BLAS uses (None if it cannot be read)."""
    b = _blas()
    return int(b[1]()) if b is not None else None


def _pools():
    import numexpr

    from layerkit.kernels import blockwise
    return numexpr, blockwise


def _set_intra(n: int) -> None:
    numexpr, nn = _pools()
    blas = _blas()
    if not _SAVED:
        _SAVED.update(numexpr=numexpr.get_num_threads(), nn=nn.THREADS,
                      blas=int(blas[1]()) if blas is not None else None)
    if n == 0:
        values = dict(_SAVED)
    else:
        values = {"numexpr": n, "nn": n, "blas": n}
    numexpr.set_num_threads(values["numexpr"])
    if blas is not None and values["blas"] is not None:
        blas[0](ctypes.c_int(values["blas"]))
    with nn.POOL_LOCK:  # the kernel pool is made lazily with THREADS - 1 workers
        for pool in nn.POOL:
            pool.shutdown(wait=False)
        nn.POOL.clear()
        nn.THREADS = values["nn"]


def _count(n, who: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{who}: expected a number of threads >= 0 (0: the default), "
                         f"received {n!r}")
    return n


class _Threading:
    """``lk.config.threading``: TensorFlow's thread settings."""

    @staticmethod
    def get_intra_op_parallelism_threads() -> int:
        """The threads one op may use, as set (0: layerkit's defaults)."""
        return _STATE["intra"]

    @staticmethod
    def set_intra_op_parallelism_threads(num_threads: int) -> None:
        """Let one op use ``num_threads`` threads: NumPy's BLAS, numexpr and layerkit's
        kernels each get that many; 0 restores their defaults.

        Raises:
            ValueError: ``num_threads`` is not an int >= 0.
        """
        n = _count(num_threads, "set_intra_op_parallelism_threads")
        _set_intra(n)
        _STATE["intra"] = n

    @staticmethod
    def get_inter_op_parallelism_threads() -> int:
        """The value last given to :meth:`set_inter_op_parallelism_threads` (default 0)."""
        return _STATE["inter"]

    @staticmethod
    def set_inter_op_parallelism_threads(num_threads: int) -> None:
        """Recorded for TensorFlow compatibility: layerkit runs one Python thread's ops
        one after another, so there is no inter-op pool to size.

        Raises:
            ValueError: ``num_threads`` is not an int >= 0.
        """
        _STATE["inter"] = _count(num_threads, "set_inter_op_parallelism_threads")


threading = _Threading()


class _Experimental:
    """``lk.config.experimental``: TensorFlow's experimental runtime settings."""

    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)
    get_visible_devices = staticmethod(get_visible_devices)
    set_visible_devices = staticmethod(set_visible_devices)
    get_virtual_device_configuration = staticmethod(get_logical_device_configuration)
    set_virtual_device_configuration = staticmethod(set_logical_device_configuration)

    @staticmethod
    def enable_op_determinism() -> None:
        """Accepted; layerkit's CPU ops are deterministic already."""
        _STATE["determinism"] = True

    @staticmethod
    def disable_op_determinism() -> None:
        """Accepted (see :meth:`enable_op_determinism`)."""
        _STATE["determinism"] = False

    @staticmethod
    def is_op_determinism_enabled() -> bool:
        """Whether :meth:`enable_op_determinism` was called (and not undone)."""
        return _STATE["determinism"]

    @staticmethod
    def get_memory_growth(device) -> bool:
        """False: memory growth is a GPU setting; the CPU allocates as it goes."""
        _check_known(device, "get_memory_growth")
        return False

    @staticmethod
    def set_memory_growth(device, enable: bool) -> None:
        """Accepted for the CPU (a GPU setting in TensorFlow; there are no GPUs)."""
        _check_known(device, "set_memory_growth")

    @staticmethod
    def get_device_details(device) -> dict:
        """``{}`` for the CPU (TensorFlow reports details of GPUs only)."""
        _check_known(device, "get_device_details")
        return {}

    @staticmethod
    def enable_tensor_float_32_execution(enabled: bool) -> None:
        """Accepted; TensorFloat-32 is a GPU format, CPU float32 math is exact float32."""
        _STATE["tf32"] = bool(enabled)

    @staticmethod
    def tensor_float_32_execution_enabled() -> bool:
        return _STATE["tf32"]


def _check_known(device, who: str) -> None:
    if device not in list_physical_devices():
        raise ValueError(f"{who}: unrecognized device {device!r}; expected one of "
                         f"{list_physical_devices()}")


experimental = _Experimental()


class _Optimizer:
    """``lk.config.optimizer``: graph-optimizer settings, recorded and returned."""

    @staticmethod
    def set_jit(enabled) -> None:
        """Recorded (XLA); ``lk.function`` compiles its own graphs."""
        _STATE["jit"] = enabled

    @staticmethod
    def get_jit():
        return _STATE["jit"]

    @staticmethod
    def set_experimental_options(options: dict) -> None:
        """Recorded (Grappler options)."""
        _STATE["optimizer_options"] = dict(options)

    @staticmethod
    def get_experimental_options() -> dict:
        return dict(_STATE["optimizer_options"])


optimizer = _Optimizer()


# ---- device placement -----------------------------------------------------------------------
_SPEC = re.compile(r"^(?:/?job:[\w-]+)?(?:/?replica:\d+)?(?:/?task:\d+)?"
                   r"(?:/?(?:device:)?([A-Za-z_]+)(?::(\d+|\*))?)?$")


@contextlib.contextmanager
def device(device_name: str | None) -> Any:
    """Run the block on ``device_name``, as ``tf.device``: every op runs on the CPU.

    Accepts TensorFlow's device names (``'/CPU:0'``, ``'cpu'``, ``'/device:CPU:0'``,
    ``'/job:localhost/replica:0/task:0/device:CPU:0'``), a LogicalDevice, ``None`` and
    ``''``. A GPU/TPU name is accepted too while soft device placement is on (the
    default): ops then run on the CPU, as TensorFlow places them when there is no GPU.

    Raises:
        ValueError: ``device_name`` is not a device name.
        lk.errors.InvalidArgumentError: a device other than the CPU while
            :func:`set_soft_device_placement` is off.

    Examples:
        >>> import layerkit as lk
        >>> with lk.device("/CPU:0"):
        ...     print(lk.constant([1.0]) + 1.0)
        Tensor([2.], shape=(1,), dtype=float32)
    """
    name = getattr(device_name, "name", device_name)
    if name is None:
        name = ""
    if not isinstance(name, str):
        raise ValueError(f"device: expected a device name such as '/CPU:0', received "
                         f"{type(device_name).__name__} {device_name!r}")
    m = _SPEC.match(name.strip())
    kind = (m.group(1) or "").upper() if m else None
    if m is None or (kind and kind not in _KNOWN_TYPES):
        raise ValueError(f"device: cannot parse device name {device_name!r}; expected e.g. "
                         f"'/CPU:0', '/device:GPU:0' or '/job:localhost/replica:0/task:0/"
                         f"device:CPU:0'")
    if kind and kind != "CPU" and not _STATE["soft_placement"]:
        raise errors.InvalidArgumentError(
            f"device: cannot place ops on {name!r}: layerkit runs on the CPU only "
            f"(available: {[d.name for d in list_logical_devices()]}); soft device "
            f"placement is off")
    yield
