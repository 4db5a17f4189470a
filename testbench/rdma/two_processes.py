#!/usr/bin/env python3
"""Remote memory between two processes on one machine, over UCX (spyre-dma rdma-bench).

Cases (each names what failed):
  verify      a server exposes a range with guard bytes; a client puts and gets every size, then
              fills the whole range with a seeded pattern and reads it back; the server checks its
              memory holds the pattern and no guard byte changed.
  peer-gone   the server is killed once its handle is out; the client fails with "peer
              unreachable" well within its timeout instead of hanging.
  peer-dies   the server is killed while the client's puts are in flight: the client fails with
              "peer unreachable" within a bound, neither hanging nor dying of a signal.
  perftest    (--perftest) UCX's own ucx_perftest with error handling on (-e, the mode the
              engine's connections use) and rdma-bench, 4 MiB puts and gets, in alternating pairs
              in the same run: bandwidths, and the median ratio. A measurement, not asserted.

Usage: two_processes.py --tool path/to/spyre-dma [--perftest [--pairs N]] [--iterations N]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def run(cmd, timeout):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


def wait_for(path, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def case_verify(tool, tmp):
    handle = os.path.join(tmp, "verify.txt")
    server = subprocess.Popen([tool, "rdma-bench", "--serve", handle, "--bytes", "8MiB", "--timeout", "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    client = run([tool, "rdma-bench", "--connect", handle, "--sizes", "1KiB..4MiB", "--iterations", "20",
                  "--verify", "--json", os.path.join(tmp, "table.json"), "--timeout", "60"], 120)
    out, _ = server.communicate(timeout=60)
    print(client.stdout + out)
    failures = []
    if client.returncode != 0:
        failures.append(f"verify: the client exited {client.returncode}")
    if server.returncode != 0:
        failures.append(f"verify: the server exited {server.returncode}")
    if "memory: verified, all 8388608 bytes hold the client's pattern" not in out:
        failures.append("verify: the server did not find the client's pattern in its memory")
    if "guard bytes: intact" not in out:
        failures.append("verify: a guard byte around the exposed range changed")
    if not re.search(r"^\s+4194304\s+20(\s+[0-9.]+){6}$", client.stdout, re.M):
        failures.append("verify: no 4 MiB row with put and get figures (bandwidth, p50, p99) in the table")
    with open(os.path.join(tmp, "table.json")) as f:
        row = [r for r in json.load(f) if r["bytes"] == 4194304][0]
    for op in ("put", "get"):
        p = row[op]
        if not (p["samples"] == 20 and 0 < p["p50_us"] <= p["p90_us"] <= p["p99_us"] <= p["p999_us"] <= p["max_us"]):
            failures.append(f"verify: the JSON's {op} latency distribution is not ordered: {p}")
    return failures


def quiet_server(tool, handle, size):
    """An rdma-bench server exposing `size`, once its handle is out; None if it never wrote one."""
    server = subprocess.Popen([tool, "rdma-bench", "--serve", handle, "--bytes", size, "--timeout", "60"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if wait_for(handle, 30):
        return server
    server.kill()
    return None


def case_peer_gone(tool, tmp):
    handle = os.path.join(tmp, "gone.txt")
    server = quiet_server(tool, handle, "1MiB")
    if not server:
        return ["peer-gone: the server wrote no handle"]
    kept = os.path.join(tmp, "gone-kept.txt")
    shutil.copy(handle, kept)  # the server removes its handle file when it goes
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=30)
    start = time.monotonic()
    client = run([tool, "rdma-bench", "--connect", kept, "--sizes", "64KiB", "--iterations", "4", "--timeout", "20"],
                 60)
    took = time.monotonic() - start
    print(client.stdout)
    failures = []
    if client.returncode != 1:
        failures.append(f"peer-gone: the client exited {client.returncode}, not 1")
    if "peer unreachable" not in client.stdout:
        failures.append("peer-gone: the client's error does not say 'peer unreachable'")
    if took > 15:
        failures.append(f"peer-gone: the client took {took:.1f} s to give up")
    return failures


def case_peer_dies_mid_put(tool, tmp):
    handle = os.path.join(tmp, "dies.txt")
    server = quiet_server(tool, handle, "64MiB")
    if not server:
        return ["peer-dies: the server wrote no handle"]
    # Far more puts than can finish before the kill: 100,000 x 4 MiB, 16 in flight.
    client = subprocess.Popen([tool, "rdma-bench", "--connect", handle, "--sizes", "4MiB", "--iterations", "100000",
                               "--op", "put", "--timeout", "20"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.5)
    failures = []
    if client.poll() is not None:
        failures.append(f"peer-dies: the client ended (status {client.returncode}) before the server was killed")
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=30)
    start = time.monotonic()
    try:
        out, _ = client.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        client.kill()
        return failures + ["peer-dies: the client hung after its peer died mid-put"]
    took = time.monotonic() - start
    print(out)
    if client.returncode != 1:
        failures.append(f"peer-dies: the client exited {client.returncode}, not 1 (negative: a signal)")
    if "peer unreachable" not in out:
        failures.append("peer-dies: the client's error does not say 'peer unreachable'")
    if took > 25:
        failures.append(f"peer-dies: the client took {took:.1f} s to give up")
    return failures


def perftest(test, size, iterations, latency=False, extra=()):
    """ucx_perftest's bandwidth in GB/s (its 'overall' MB/s column of the Final line), or with
    latency=True its median latency in us (the '50.0%ile' column)."""
    args = ["-t", test, "-s", str(size), "-n", str(iterations), "-e"] + list(extra)
    server = subprocess.Popen(["ucx_perftest"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):  # the server listens once it has started
            time.sleep(0.1)
            client = run(["ucx_perftest", "localhost"] + args, 120)
            if client.returncode == 0:
                break
        m = re.search(r"^Final:\s+\d+\s+([0-9.]+)\s+\S+\s+\S+\s+\S+\s+([0-9.]+)", client.stdout, re.M)
        if not m:
            return None
        return float(m.group(1)) if latency else float(m.group(2)) / 1000.0
    finally:
        server.wait(timeout=60)


def rdma_bench(tool, tmp, iterations):
    """rdma-bench's 4 MiB put and get bandwidths in GB/s and 8 B latencies in us, or None."""
    handle = os.path.join(tmp, "bench.txt")
    server = subprocess.Popen([tool, "rdma-bench", "--serve", handle, "--bytes", "4MiB", "--timeout", "120"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    table = os.path.join(tmp, "bench.json")
    client = run([tool, "rdma-bench", "--connect", handle, "--sizes", "8,4MiB", "--iterations", str(iterations),
                  "--window", "1", "--timeout", "120", "--json", table], 240)
    server.wait(timeout=60)
    if client.returncode != 0:
        return None
    with open(table) as f:
        rows = {r["bytes"]: r for r in json.load(f)}
    return {"put": rows[4194304]["put"]["gbps"], "get": rows[4194304]["get"]["gbps"],
            "put_lat": rows[8]["put"]["p50_us"], "get_lat": rows[8]["get"]["p50_us"]}


def case_perftest(tool, tmp, iterations, pairs):
    """Pairs run alternately (this machine's speed drifts); the median ratio of each op."""
    if not shutil.which("ucx_perftest"):
        return ["perftest: ucx_perftest not found (Debian ucx-utils)"]
    ratios = {"put": [], "get": [], "put_lat": [], "get_lat": []}
    for k in range(pairs):
        ucx = {"put": perftest("ucp_put_bw", 4 << 20, iterations), "get": perftest("ucp_get", 4 << 20, iterations),
               "put_lat": perftest("ucp_put_lat", 8, 10 * iterations, latency=True),
               "get_lat": perftest("ucp_get", 8, 10 * iterations, latency=True, extra=("-O", "1"))}
        ours = rdma_bench(tool, tmp, iterations)
        if ours is None or None in ucx.values():
            return [f"perftest: no figures in pair {k} (rdma-bench: {ours}, ucx_perftest: {ucx})"]
        for op in ("put", "get"):
            ratios[op].append(ours[op] / ucx[op])
            print(f"pair {k}: 4 MiB {op}: rdma-bench {ours[op]:.3f} GB/s, ucx_perftest -e {ucx[op]:.3f} GB/s, "
                  f"ratio {ours[op] / ucx[op]:.2f}")
        for op in ("put_lat", "get_lat"):
            ratios[op].append(ours[op] / ucx[op])
            print(f"pair {k}: 8 B {op[:3]} latency: rdma-bench {ours[op]:.2f} us, ucx_perftest -e {ucx[op]:.2f} us "
                  f"(median), ratio {ours[op] / ucx[op]:.2f}")
    for op, what in (("put", "4 MiB put bandwidth"), ("get", "4 MiB get bandwidth"), ("put_lat", "8 B put latency"),
                     ("get_lat", "8 B get latency")):
        r = sorted(ratios[op])
        print(f"{what}: rdma-bench / ucx_perftest, median of {pairs} pairs: {r[len(r) // 2]:.2f} "
              f"(range {r[0]:.2f}-{r[-1]:.2f})")
    return []


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tool", required=True)
    p.add_argument("--perftest", action="store_true")
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--pairs", type=int, default=3)
    a = p.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="spyre-dma-rdma-") as tmp:
        failures += case_verify(a.tool, tmp)
        failures += case_peer_gone(a.tool, tmp)
        failures += case_peer_dies_mid_put(a.tool, tmp)
        if a.perftest:
            failures += case_perftest(a.tool, tmp, a.iterations, a.pairs)
    for f in failures:
        print("FAIL " + f)
    print("rdma two processes: " + ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
