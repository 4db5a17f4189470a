#!/usr/bin/python3
"""A small copy on a high-priority stream, alone and behind bulk copies of low-priority streams:
how much of its latency the bulk traffic adds (what a runtime's priority streams are for), and
what the ring share that keeps it small costs the bulk traffic.

    PYTHONPATH=<build>/python python3 python/bench/priority_latency.py [--backend refdev]
        [--copies 1000] [--bulk-streams 8] [--bulk-size 64MiB] [--share 65536] [--json out.json]

Each run times --copies copies of --small bytes (H2D, registered memory) on a stream of priority 10,
one after another, from the call to the completion (the op's host times, on the device's clock:
simulated time on sim and rtl, the wall clock on refdev). Unloaded: nothing else runs. Loaded:
--bulk-streams streams of priority 0 keep 4 H2D copies of --bulk-size each in flight, topped up
after every small copy. Reported: p50, p90, p99, p99.9 and the largest of both, and the loaded p99
over the unloaded p99 (the measure of priority that shows; with --repeat, for each pair of runs
and their median). The first loaded copy finds the rings
as the bulk streams filled them before the high-priority stream was active: it is the largest.

The cost: the bulk streams' bandwidth (--bulk-streams copies of --bulk-size each, from the first
call to the last completion, the second of two rounds) with no other stream, and again while an idle high-priority stream
counts as active (it completed a copy within priority_hold), so that they keep to the ring share.
All runs are in the same process, one after the other.
"""

import argparse
import json
import os
import sys

import spyre_dma
from sizes import parse_size  # this folder's sizes.py


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def open_engine(backend, share, hold=None):
    kw = {} if share is None else {"priority_share_bytes": share}
    if hold is not None:
        kw["priority_hold"] = hold
    return spyre_dma.Engine(backend, **kw)


def latency(backend, share, copies, small, bulk_streams, bulk_size):
    with open_engine(backend, share) as engine:
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
            op = high.copy_h2d(dst, src)
            op.wait(timeout=120)
            times.append((op.host_end_ns - op.host_start_ns) * 1e-3)
            for s, (d, h) in zip(lows, bulk):
                if s.query():  # keep the bulk streams busy
                    for _ in range(4):
                        s.copy_h2d(d, h)
        for s in lows:
            s.synchronize(timeout=600)
        yields = engine.stats()["priority_yields"]
    times.sort()
    out = {q: percentile(times, p) for q, p in (("p50_us", 0.50), ("p90_us", 0.90), ("p99_us", 0.99),
                                                ("p999_us", 0.999))}
    out["max_us"] = times[-1]
    out["priority_yields"] = yields
    return out


def bulk_bandwidth(backend, share, bulk_streams, bulk_size, with_high):
    # A high-priority stream completes one small copy first; with a long hold it counts as active
    # for the whole run, so that the bulk streams keep to the share throughout.
    with open_engine(backend, share, hold=3600.0) as engine:
        if with_high:
            high = engine.create_stream(priority=10)
            high.copy_h2d(engine.allocate(4096), engine.allocate_host(4096)).wait(timeout=60)
        streams = [(engine.create_stream(priority=0), engine.allocate(bulk_size), engine.allocate_host(bulk_size))
                   for _ in range(bulk_streams)]
        for _ in range(2):  # the first round touches the memory for the first time: the second is timed
            ops = [s.copy_h2d(d, h) for s, d, h in streams]
            for op in ops:
                op.wait(timeout=600)
        span_ns = max(o.host_end_ns for o in ops) - min(o.host_start_ns for o in ops)
    return bulk_streams * bulk_size / span_ns  # bytes per ns = GB/s


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="refdev")
    p.add_argument("--copies", type=int, default=1000)
    p.add_argument("--small", default="4KiB")
    p.add_argument("--bulk-streams", type=int, default=8)
    p.add_argument("--bulk-size", default="64MiB")
    p.add_argument("--share", type=int, help="EngineOptions::priority_share_bytes (default: the engine's; 0: none)")
    p.add_argument("--repeat", type=int, default=1, help="pairs of runs (alone, loaded); the median p99 ratio")
    p.add_argument("--quick", action="store_true", help="20 copies behind 2 streams of 4 MiB (CI: that it runs)")
    p.add_argument("--json", help="also write the figures here")
    a = p.parse_args()
    copies, streams, bulk = (20, 2, 4 << 20) if a.quick else (a.copies, a.bulk_streams, parse_size(a.bulk_size))
    small = parse_size(a.small)
    ratios = []
    for _ in range(a.repeat):  # pairs, alone then loaded: a noisy machine's tail moves between runs
        alone = latency(a.backend, a.share, copies, small, 0, bulk)
        loaded = latency(a.backend, a.share, copies, small, streams, bulk)
        ratios.append(loaded["p99_us"] / alone["p99_us"])
    bw_alone = bulk_bandwidth(a.backend, a.share, streams, bulk, False)
    bw_shared = bulk_bandwidth(a.backend, a.share, streams, bulk, True)
    out = {"backend": a.backend, "copies": copies, "small_bytes": small, "bulk_streams": streams,
           "bulk_bytes": bulk, "share_bytes": a.share, "alone": alone, "loaded": loaded,
           "p99_ratio": ratios[-1], "p99_ratios": ratios, "p99_ratio_median": sorted(ratios)[len(ratios) // 2],
           "bulk_gbps_alone": bw_alone, "bulk_gbps_sharing": bw_shared}
    print(f"{a.backend}: {small} B on a priority-10 stream, {copies} copies")
    for name, r in (("alone", alone), (f"behind {streams} streams of {bulk >> 20} MiB", loaded)):
        print(f"  {name:<28} p50 {r['p50_us']:9.1f}  p90 {r['p90_us']:9.1f}  p99 {r['p99_us']:9.1f}"
              f"  p99.9 {r['p999_us']:9.1f}  max {r['max_us']:10.1f} us")
    print(f"  loaded p99 / alone p99: {out['p99_ratio']:.1f}x")
    if a.repeat > 1:
        print(f"  over {a.repeat} pairs: " + " ".join(f"{r:.1f}x" for r in ratios) +
              f", median {out['p99_ratio_median']:.1f}x (the figures above: the last pair)")
    print(f"  bulk bandwidth: {bw_alone:.2f} GB/s alone, {bw_shared:.2f} GB/s keeping to the share"
          f" ({bw_shared / bw_alone:.2f}x)")
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
