"""Shared fixtures: engines on the backends every engine test runs on, and the project's data."""

import os

import numpy as np
import pytest

import spyre_dma

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "traces", "data")
KINETO = os.path.join(DATA, "benchmark_result_2869224_1695835535_trace.json.gz")

# refdev: host threads, wall-clock time; sim: the SystemC model, host-driven; rtl: the model with
# the verilated data path. The last two advance only when the host lets them.
BACKENDS = [b["name"] for b in spyre_dma.backends() if b["name"] in ("refdev", "sim", "rtl") and not b["unavailable"]]


@pytest.fixture(params=BACKENDS)
def engine(request):
    with spyre_dma.Engine(request.param) as e:
        yield e


@pytest.fixture
def sim():
    with spyre_dma.Engine("sim") as e:
        yield e


@pytest.fixture
def refdev():
    with spyre_dma.Engine("refdev") as e:
        yield e


def aligned(nbytes, dtype=np.uint8):
    """A zeroed array whose data starts on a 128-byte boundary: the engine DMAs registered memory
    directly only from such addresses (numpy and torch align to 64 at most)."""
    raw = np.zeros(nbytes + 128, dtype=np.uint8)
    skip = -raw.ctypes.data % 128
    return raw[skip:skip + nbytes].view(dtype)
