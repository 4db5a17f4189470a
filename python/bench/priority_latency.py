#!/usr/bin/python3
"""A small copy on a high-priority stream, alone and behind bulk copies of low-priority streams:
how much of its latency the bulk traffic adds (what a runtime's priority streams are for).

    PYTHONPATH=<build>/python python3 python/bench/priority_latency.py [--backend refdev]
        [--copies 1000] [--bulk-streams 8] [--bulk-size 64MiB] [--json out.json]

Each run times --copies copies of --small bytes (H2D, registered memory) on a stream of priority 10,
one after another, from the call to the completion (wall clock). Unloaded: nothing else runs. Loaded:
--bulk-streams streams of priority 0 keep 4 H2D copies of --bulk-size each in flight, topped up
after every small copy. Reported: p50, p90 and p99 of both, and the loaded p99 over the unloaded
p99 (the measure of priority that shows). Both runs are in the same process, one after the other.
"""

import argparse
import json
import os
import sys
import time

import spyre_dma
from sizes import parse_size  # this folder's sizes.py


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def run(backend, copies, small, bulk_streams, bulk_size):
    with spyre_dma.Engine(backend) as engine:
        high = engine.create_stream(priority=10, name="small")
        dst = engine.allocate(small)
        src = engine.allocate_host(small)
        lows, bulk = [], []
        for _ in range(bulk_streams):
            lows.append(engine.create_stream(priority=0))
            bulk.append((engine.allocate(bulk_size), engine.allocate_host(bulk_size)))
        for s, (d, h) in zip(lows, bulk):
            for _ in range(4):
                s.copy_h2d(d, h)
        times = []
        for _ in range(copies):
            t0 = time.perf_counter()
            high.copy_h2d(dst, src).wait(timeout=120)
            times.append(time.perf_counter() - t0)
            for s, (d, h) in zip(lows, bulk):
                if s.query():  # keep the bulk streams busy
                    for _ in range(4):
                        s.copy_h2d(d, h)
        for s in lows:
            s.synchronize(timeout=600)
    times.sort()
    return {q: percentile(times, p) * 1e6 for q, p in (("p50_us", 0.50), ("p90_us", 0.90), ("p99_us", 0.99))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="refdev")
    p.add_argument("--copies", type=int, default=1000)
    p.add_argument("--small", default="4KiB")
    p.add_argument("--bulk-streams", type=int, default=8)
    p.add_argument("--bulk-size", default="64MiB")
    p.add_argument("--quick", action="store_true", help="20 copies behind 2 streams of 4 MiB (CI: that it runs)")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args()
    copies, streams, bulk = (20, 2, 4 << 20) if a.quick else (a.copies, a.bulk_streams, parse_size(a.bulk_size))
    small = parse_size(a.small)
    alone = run(a.backend, copies, small, 0, bulk)
    loaded = run(a.backend, copies, small, streams, bulk)
    out = {"backend": a.backend, "copies": copies, "small_bytes": small, "bulk_streams": streams,
           "bulk_bytes": bulk, "alone": alone, "loaded": loaded, "p99_ratio": loaded["p99_us"] / alone["p99_us"]}
    print(f"{a.backend}: {small} B on a priority-10 stream, {copies} copies")
    for name, r in (("alone", alone), (f"behind {streams} streams of {bulk >> 20} MiB", loaded)):
        print(f"  {name:<28} p50 {r['p50_us']:10.1f} us  p90 {r['p90_us']:10.1f} us  p99 {r['p99_us']:10.1f} us")
    print(f"  loaded p99 / alone p99: {out['p99_ratio']:.1f}x")
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
