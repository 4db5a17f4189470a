#!/usr/bin/python3
"""What Python adds to a small copy: the same copies submitted from Python and from a C++ loop in
the same process, on the same engine and stream, alternating, so that both see the same machine.

    PYTHONPATH=<build>/python python3 python/bench/copy_overhead.py [--backend refdev] [--ops N]

For each host-memory kind (registered, pageable numpy, pageable torch tensor) it reports the median
time per op of the C++ loop (the baseline), of the Python loop, their difference (the Python
overhead per op) and their ratio, for submission alone and for submission plus the final
synchronize. Measures; asserts nothing about times.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import spyre_dma


def python_loop(stream, dst, src, count):
    copy = stream.copy_h2d
    start = time.perf_counter()
    for _ in range(count):
        copy(dst, src)
    submitted = time.perf_counter()
    stream.synchronize()
    return submitted - start, time.perf_counter() - start


def sources(engine, nbytes):
    pinned = engine.allocate_host(nbytes)
    np.frombuffer(pinned, dtype=np.uint8)[:] = 1
    out = [("registered", pinned), ("pageable numpy", np.ones(nbytes, dtype=np.uint8))]
    try:
        import torch

        out.append(("pageable torch", torch.ones(nbytes, dtype=torch.uint8)))
    except ImportError:
        pass
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="refdev")
    p.add_argument("--bytes", type=int, default=4096, help="bytes per copy (default 4096)")
    p.add_argument("--ops", type=int, default=20000, help="copies per loop (default 20000)")
    p.add_argument("--reps", type=int, default=7, help="alternating repetitions (default 7)")
    p.add_argument("--quick", action="store_true", help="a short run (CI: that it runs)")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args()
    if a.quick:
        a.ops, a.reps = 500, 2
    rows = []
    with spyre_dma.Engine(a.backend) as engine:
        stream = engine.create_stream()
        dst = engine.allocate(max(128, a.bytes))
        for kind, src in sources(engine, a.bytes):
            native, python = [], []
            spyre_dma._native._native_h2d_loop(stream, dst, src, a.ops // 10)  # warm-up
            python_loop(stream, dst, src, a.ops // 10)
            for _ in range(a.reps):
                native.append(spyre_dma._native._native_h2d_loop(stream, dst, src, a.ops))
                python.append(python_loop(stream, dst, src, a.ops))
            for i, phase in enumerate(("submit", "submit+sync")):
                c = statistics.median(r[i] for r in native) / a.ops * 1e9
                py = statistics.median(r[i] for r in python) / a.ops * 1e9
                rows.append({"memory": kind, "phase": phase, "cpp_ns": c, "python_ns": py,
                             "overhead_ns": py - c, "ratio": py / c})
    print(f"{a.backend}: {a.ops} copies of {a.bytes} B per loop, median of {a.reps} alternating repetitions")
    print(f"{'host memory':<16} {'phase':<12} {'C++ ns/op':>10} {'Python ns/op':>13} {'overhead ns':>12} {'ratio':>6}")
    for r in rows:
        print(f"{r['memory']:<16} {r['phase']:<12} {r['cpp_ns']:>10.0f} {r['python_ns']:>13.0f} "
              f"{r['overhead_ns']:>12.0f} {r['ratio']:>6.2f}")
    if a.json:
        with open(a.json + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"backend": a.backend, "bytes": a.bytes, "ops": a.ops, "reps": a.reps, "rows": rows}, f, indent=1)
        import os

        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
