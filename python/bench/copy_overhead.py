#!/usr/bin/python3
"""What Python adds to a small copy: the same copies submitted from Python and from a C++ loop in
the same process, on the same engine and stream, alternating, so that both see the same machine.

    PYTHONPATH=<build>/python python3 python/bench/copy_overhead.py [--backend refdev] [--ops N]

For each host-memory kind (registered, pageable numpy, pageable torch tensor) it reports the median
time per op of the Python loop and of two C++ baselines:
  * C++ at its own pace: the loop as fast as C++ submits (what a runtime in C++ would see);
  * C++ at Python's pace: op i submitted no earlier than i times the Python loop's time per op, and
    only the time inside the submit calls counted. An engine whose device has threads of its own
    (refdev) costs more per op when ops arrive further apart (each doorbell finds the device idle and
    wakes it, completions contend for the engine's lock), whatever the language; this baseline has
    the same pace, so the difference is what the binding itself adds.
Measures; asserts nothing about times.
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
    native_loop = spyre_dma._native._native_h2d_loop
    with spyre_dma.Engine(a.backend) as engine:
        stream = engine.create_stream()
        dst = engine.allocate(max(128, a.bytes))
        for kind, src in sources(engine, a.bytes):
            native, paced, python = [], [], []
            native_loop(stream, dst, src, a.ops // 10)  # warm-up
            python_loop(stream, dst, src, a.ops // 10)
            for _ in range(a.reps):
                native.append(native_loop(stream, dst, src, a.ops))
                python.append(python_loop(stream, dst, src, a.ops))
                paced.append(native_loop(stream, dst, src, a.ops, python[-1][0] / a.ops * 1e9))

            def per_op(runs, i):
                return statistics.median(r[i] for r in runs) / a.ops * 1e9

            py, c, c_paced = per_op(python, 0), per_op(native, 0), per_op(paced, 2)
            rows.append({"memory": kind, "python_ns": py, "cpp_ns": c, "cpp_paced_ns": c_paced,
                         "python_total_ns": per_op(python, 1), "cpp_total_ns": per_op(native, 1),
                         "overhead_ns": py - c, "overhead_paced_ns": py - c_paced})
    print(f"{a.backend}: {a.ops} copies of {a.bytes} B per loop, median of {a.reps} alternating repetitions; "
          "ns per op submitted")
    print(f"{'host memory':<16} {'Python':>7} {'C++':>7} {'over C++':>9} {'C++ at Py pace':>15} {'over that':>10} "
          f"{'Py+sync':>8} {'C+++sync':>9}")
    for r in rows:
        print(f"{r['memory']:<16} {r['python_ns']:>7.0f} {r['cpp_ns']:>7.0f} {r['overhead_ns']:>9.0f} "
              f"{r['cpp_paced_ns']:>15.0f} {r['overhead_paced_ns']:>10.0f} {r['python_total_ns']:>8.0f} "
              f"{r['cpp_total_ns']:>9.0f}")
    if a.json:
        with open(a.json + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"backend": a.backend, "bytes": a.bytes, "ops": a.ops, "reps": a.reps, "rows": rows}, f, indent=1)
        import os

        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
