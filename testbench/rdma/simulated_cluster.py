#!/usr/bin/env python3
"""spyre-dma on a simulated cluster: the ring all-reduce (two nodes back to back, and N through a
switch) twice with the same arguments must give the same digest (every rank's results and every simulated time) with every size checked, and a
run of another size the digest must tell apart; rdma-bench --backend sim must verify its range
and report a put bandwidth for every size.

Usage: simulated_cluster.py --tool path/to/spyre-dma [--ranks N] [--sizes LIST]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    return p.returncode, p.stdout


def digest(out):
    m = re.search(r"^# digest ([0-9a-f]{16})", out, re.M)
    return m.group(1) if m else None


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tool", required=True)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--sizes", default="4KiB..4MiB")
    a = p.parse_args()
    failures = []
    digests = []
    # Two nodes back to back, and --ranks nodes through the switch.
    for ranks in sorted({2, a.ranks}):
        allreduce = [a.tool, "allreduce", "--backend", "sim", "--ranks", str(ranks), "--sizes", a.sizes,
                     "--iterations", "3"]
        runs = [run(allreduce) for _ in range(2)]
        other = run(allreduce[:-4] + ["--sizes", "8KiB", "--iterations", "3"])
        for i, (rc, out) in enumerate(runs + [other]):
            if rc != 0 or "every size checked on every rank: ok" not in out:
                failures.append(f"{ranks} ranks, all-reduce run {i} exited {rc}: {out.strip()}")
        d = [digest(out) for _, out in runs + [other]]
        if None in d:
            failures.append(f"{ranks} ranks: an all-reduce run printed no digest")
        elif d[0] != d[1]:
            failures.append(f"{ranks} ranks: the same all-reduce gave two digests: {d[0]} and {d[1]}")
        elif d[0] == d[2]:
            failures.append(f"{ranks} ranks: different sizes gave the same digest {d[0]}")
        digests.append(f"{ranks} ranks {d[0]}")
        print(runs[0][1], end="")
    rc, out = run([a.tool, "rdma-bench", "--backend", "sim", "--sizes", "8,4KiB,1MiB", "--iterations", "50",
                   "--bytes", "4MiB", "--verify"])
    print(out, end="")
    rows = re.findall(r"^\s+(\d+)\s+50\s+([0-9.]+)\s", out, re.M)
    if rc != 0 or "verified:" not in out or len(rows) != 3 or any(float(bw) <= 0 for _, bw in rows):
        failures.append(f"rdma-bench --backend sim exited {rc} or its table is incomplete")
    # The cluster's Perfetto trace: whole JSON, a completion per put of the ring (2 x (N-1) per
    # rank per all-reduce, two all-reduces: the checked one and one timed).
    with tempfile.TemporaryDirectory(prefix="spyre-dma-cluster-") as tmp:
        path = os.path.join(tmp, "cluster.json")
        rc, out = run([a.tool, "allreduce", "--backend", "sim", "--ranks", "3", "--sizes", "64KiB",
                       "--iterations", "1", "--trace", path])
        try:
            with open(path) as f:
                events = json.load(f)["traceEvents"]
            puts = sum(1 for e in events if e.get("cat") == "nic" and e.get("name") == "put")
        except (OSError, ValueError, KeyError) as e:
            puts = -1
            failures.append(f"allreduce --trace: no readable trace at {path}: {e}")
        if rc != 0 or puts != 2 * 3 * 2 * 2:
            failures.append(f"allreduce --trace exited {rc} with {puts} put completions in its trace (expected 24)")
    for f in failures:
        print("FAILED:", f)
    if failures:
        return 1
    print(f"simulated cluster: passed (all-reduce digests twice the same: {', '.join(digests)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
