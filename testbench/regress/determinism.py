#!/usr/bin/env python3
"""The simulator is deterministic, proven on the regression bench: runs each (suite, seeds) of a
list twice on a simulated backend, once with one worker and once with two, and requires both
runs' determinism digests (every RB, every memory image, every simulated timestamp; see
testbench/regress/src/digest.hpp) to be identical, test by test and for the whole run. Also checks
that the digest is not blind: a run with one byte corrupted behind the engine's back must give
another memory digest. Exit status 0 when every check holds; 1 otherwise, naming each difference.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# (suite, seeds, extra options): smoke, a slice of the nightly (random faults of every kind at the
# suite's rate) and the whole fault campaign (one fault of each kind at a chosen CB).
CASES = [
    ("smoke", "1..12", []),
    ("nightly", "1..6", []),
    ("faults", "0..31", []),
]
TIMEOUT_S = 600


def run(tool, backend, suite, seeds, extra, jobs, folder, tag):
    report = os.path.join(folder, f"{suite}-{backend}-{tag}.json")
    cmd = [tool, "regress", "--suite", suite, "--backend", backend, "--seeds", seeds, "-j", str(jobs),
           "--progress", "none", "--json", report] + extra
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
    with open(report) as f:
        return proc.returncode, json.load(f), " ".join(cmd), proc.stdout


def per_test(report):
    return {t["seed"]: (t["status"], t.get("digest", {}).get("test")) for t in report["tests"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tool", required=True, help="the spyre-dma binary")
    ap.add_argument("--backend", action="append", required=True, help="sim, rtl (repeatable)")
    args = ap.parse_args()
    errors = []
    with tempfile.TemporaryDirectory() as folder:
        for backend in args.backend:
            for suite, seeds, extra in CASES:
                rc1, a, cmd1, out1 = run(args.tool, backend, suite, seeds, extra, 1, folder, "j1")
                rc2, b, cmd2, out2 = run(args.tool, backend, suite, seeds, extra, 2, folder, "j2")
                what = f"{suite} {seeds} on {backend}"
                for rc, cmd, out in ((rc1, cmd1, out1), (rc2, cmd2, out2)):
                    if rc != 0:
                        errors.append(f"{what}: `{cmd}` exited {rc}:\n{out}")
                ta, tb = per_test(a), per_test(b)
                if ta.keys() != tb.keys():
                    errors.append(f"{what}: the runs hold different tests: {sorted(ta)} and {sorted(tb)}")
                for seed in sorted(ta.keys() & tb.keys()):
                    if ta[seed] != tb[seed] or ta[seed][1] is None:
                        errors.append(f"{what}: seed {seed}: -j1 {ta[seed]} against -j2 {tb[seed]}")
                if a["digest"] != b["digest"]:
                    errors.append(f"{what}: run digest {a['digest']} with -j1, {b['digest']} with -j2")
                print(f"{what}: {len(ta)} tests, digest {a['digest']} (-j1) {b['digest']} (-j2)")
            # Not blind: one corrupted byte changes the digest (the test fails too, as it must).
            _, clean, _, _ = run(args.tool, backend, "smoke", "5", [], 1, folder, "clean")
            _, bad, _, _ = run(args.tool, backend, "smoke", "5", ["--corrupt-seed", "5"], 1, folder, "corrupt")
            m_clean, m_bad = (r["tests"][0].get("digest", {}).get("memory") for r in (clean, bad))
            if m_clean is None or m_clean == m_bad:
                errors.append(f"smoke seed 5 on {backend}: a corrupted byte left the memory digest at {m_clean}")
    for e in errors:
        print("FAIL " + e)
    print("determinism: " + ("ok" if not errors else f"{len(errors)} difference(s)"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
