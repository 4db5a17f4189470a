#!/usr/bin/python3
"""A large tensor's round trip through the engine, and the memory it took: shows that Python adds
no copy of the data.

    PYTHONPATH=<build>/python python3 python/bench/round_trip_memory.py [--backend sim] [--size 1GiB]

A CPU tensor of --size bytes goes to the device and back into a second tensor (pageable memory,
staged by the engine). Both tensors are allocated and touched first. The process's peak resident
memory is reset just before the round trip (/proc/self/clear_refs) and read after it:
  * resident growth: what stayed (the device's memory, held in this process by a simulated device);
  * transient peak: the peak above what stayed: staging buffers, and any extra copy of the data.
An extra copy anywhere on the Python side would put the transient peak at or above --size;
--control makes one on purpose (the source passed as bytes(tensor)), to show that the method sees it.
"""

import argparse
import json
import os
import sys
import time

import spyre_dma
from sizes import parse_size  # this folder's sizes.py


def status_kib(key):
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {key}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="sim")
    p.add_argument("--size", default="1GiB")
    p.add_argument("--quick", action="store_true", help="64 MiB (CI: that it runs)")
    p.add_argument("--control", action="store_true", help="copy the source once in Python first (the method's control)")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args()
    size = parse_size("64MiB" if a.quick else a.size)
    import torch

    src = torch.arange(size, dtype=torch.int64).to(torch.uint8) if size <= (64 << 20) else torch.full((size,), 7, dtype=torch.uint8)
    dst = torch.zeros(size, dtype=torch.uint8)
    dst.fill_(1)  # touched, so that its pages count before the round trip
    with spyre_dma.Engine(a.backend) as engine:
        buf = engine.allocate(size)
        stream = engine.create_stream()
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # resets the peak resident size to the current one
        before = status_kib("VmRSS")
        start = time.perf_counter()
        stream.copy_h2d(buf, bytes(src.numpy()) if a.control else src)
        stream.copy_d2h(dst, buf)
        stream.synchronize()
        wall = time.perf_counter() - start
        peak, after = status_kib("VmHWM"), status_kib("VmRSS")
        sim_ns = engine.simulated_time_ns()
        staging = engine.options["staging_buffers"] * engine.options["staging_buffer_bytes"]
    equal = torch.equal(src, dst)
    mib = 1 << 10
    r = {"backend": a.backend, "control": a.control, "bytes": size, "data_equal": equal, "wall_s": wall, "simulated_ns": sim_ns,
         "resident_growth_mib": (after - before) / mib, "transient_peak_mib": (peak - after) / mib,
         "staging_mib": staging / (1 << 20), "transient_over_size": (peak - after) * 1024 / size}
    print(f"{a.backend}{' (control: one extra copy)' if a.control else ''}: {size / (1 << 20):.0f} MiB tensor to the device and back, data {'equal' if equal else 'DIFFERENT'}, "
          f"{wall:.2f} s wall")
    print(f"  resident growth {r['resident_growth_mib']:.0f} MiB (the device's memory), transient peak "
          f"{r['transient_peak_mib']:.0f} MiB above it ({r['transient_over_size']:.3f} of the tensor; staging "
          f"buffers {r['staging_mib']:.0f} MiB)")
    if a.json:
        with open(a.json + ".tmp", "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1)
        os.replace(a.json + ".tmp", a.json)
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
