"""spyre_dma: the DMA engine of a Spyre-class PCIe accelerator, its simulated devices and trace tools.

    import spyre_dma, numpy as np
    with spyre_dma.Engine("sim") as engine:           # the SystemC model; "refdev", "rtl", ...
        stream = engine.create_stream()
        buf = engine.allocate(1 << 20)
        src = np.arange(1 << 18, dtype=np.float32)     # any buffer-protocol object or CPU tensor
        dst = np.empty_like(src)
        stream.copy_h2d(buf, src)
        stream.copy_d2h(dst, buf)
        stream.synchronize()                           # raises the first error, typed

Host memory is used in place: numpy arrays, bytes, bytearray, memoryview and contiguous CPU torch
tensors are copied from (and into) without an extra copy, and stay alive until their op completes.
The GIL is released while the engine submits and waits. Errors are spyre_dma.Error subclasses,
one per Status kind, with the engine's messages. docs/python.md has the whole guide.
"""

import atexit as _atexit

from . import _native
from ._native import (
    BackendError,
    CalibrationResult,
    CallbackFailed,
    Cancelled,
    Closed,
    Comparison,
    ConfigError,
    DependencyFailed,
    DeviceBuffer,
    DeviceError,
    DeviceFault,
    DeviceTimeout,
    Engine,
    Error,
    ErrorCode,
    Event,
    HostBuffer,
    InvalidArgument,
    IommuFault,
    Op,
    OpKind,
    OutOfMemory,
    OutputError,
    PeerUnreachable,
    PoolFetch,
    RemoteAccess,
    ReplayResult,
    SharedHostPool,
    Status,
    Stream,
    SubmitBatch,
    Trace,
    TraceError,
    WaitTimeout,
    backends,
    calibrate,
    compare,
    import_bandwidth_test,
    import_hip_bus_bandwidth,
    import_kineto,
    import_nvbandwidth,
    import_rocm_bandwidth_test,
    model_config,
    presets,
    replay,
)
from .regress import read_regress_results, regress, regress_frame

__all__ = [
    "BackendError", "CalibrationResult", "CallbackFailed", "Cancelled", "Closed", "Comparison", "ConfigError",
    "DependencyFailed", "DeviceBuffer",
    "DeviceError", "DeviceFault", "DeviceTimeout", "Engine", "Error", "ErrorCode", "Event", "HostBuffer",
    "InvalidArgument", "IommuFault", "Op", "OpKind", "OutOfMemory", "OutputError", "PeerUnreachable",
    "PoolFetch", "RemoteAccess", "ReplayResult", "SharedHostPool", "Status",
    "Stream", "SubmitBatch", "Trace", "TraceError", "WaitTimeout", "backends", "calibrate", "compare",
    "import_bandwidth_test", "import_hip_bus_bandwidth", "import_kineto", "import_nvbandwidth",
    "import_rocm_bandwidth_test", "model_config", "presets", "read_regress_results", "regress",
    "regress_frame", "replay",
]

# The native classes and functions present themselves as the package's (help(), repr, pickling
# errors), which is where users import them from.
for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", None) == "spyre_dma._native":
        try:
            _obj.__module__ = __name__
        except (AttributeError, TypeError):
            pass
del _name, _obj

# Engines still open at exit are closed while the interpreter can still run their callbacks.
_atexit.register(_native._close_all)
