#!/usr/bin/env python3
"""spyre-dma allreduce as N processes on one machine: every rank must exit 0, rank 0's table must
have a row per size with no element summed wrong, and every rank must have checked every size.

Usage: allreduce_ranks.py --tool path/to/spyre-dma [--ranks N] [--sizes LIST] [--iterations K]
"""
import argparse
import re
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tool", required=True)
    p.add_argument("--ranks", type=int, default=3)
    p.add_argument("--sizes", default="4KiB..1MiB")
    p.add_argument("--iterations", type=int, default=3)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="spyre-dma-allreduce-") as exchange:
        procs = [subprocess.Popen([a.tool, "allreduce", "--ranks", str(a.ranks), "--rank", str(r), "--exchange",
                                   exchange, "--sizes", a.sizes, "--iterations", str(a.iterations), "--timeout", "60"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for r in range(a.ranks)]
        outs = [pr.communicate(timeout=240)[0] for pr in procs]
    failures = []
    for r, (pr, out) in enumerate(zip(procs, outs)):
        if pr.returncode != 0:
            failures.append(f"rank {r} exited {pr.returncode}: {out.strip()}")
    print(outs[0])
    rows = re.findall(r"^\s+(\d+)\s+\d+\s+float\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+(\d+)$", outs[0], re.M)
    if not rows:
        failures.append("rank 0 printed no rows")
    for size, wrong in rows:
        if wrong != "0":
            failures.append(f"size {size}: {wrong} elements summed wrong")
    if "every size checked on every rank: ok" not in outs[0]:
        failures.append("rank 0 did not report every size checked")
    for f in failures:
        print("FAIL " + f)
    print(f"allreduce over {a.ranks} ranks: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
