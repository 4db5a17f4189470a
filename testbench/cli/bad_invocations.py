#!/usr/bin/env python3
"""Runs spyre-dma once per row of a table of bad invocations and checks each one fails cleanly.

A row (bad_invocations.tsv, tab-separated): the exit status expected, the words its standard error
must contain (separated by ' | '), and the command line after `spyre-dma` (shell words). In the
command, {in} is the folder of bad input files (testbench/cli/inputs), {data} the project's sample
traces (traces/data) and {tmp} an empty folder of the row's own, which is also the working folder.

Every row must: end with its status (a crash or a signal never passes), within a bound (a hang
fails), say the words, leave {tmp} as empty as it started (no partial or stray output), and leave
the input files as they were. Exit status 0 when every row passes; 1 otherwise, listing each
failed row with its line number.
"""
import argparse
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile

ROW_TIMEOUT_S = 120


def digest(folder):
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(folder)):
        for name in sorted(files):
            path = os.path.join(root, name)
            h.update(path.encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def read_table(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise SystemExit(f"{path}:{number}: expected 3 tab-separated columns, got {len(parts)}")
            status, words, command = parts
            try:
                status = int(status)
            except ValueError:
                raise SystemExit(f"{path}:{number}: exit status '{status}' is not an integer")
            rows.append((number, status, [w.strip() for w in words.split(" | ") if w.strip()], command))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--only", type=int, help="run only the row on this line")
    args = ap.parse_args()
    rows = read_table(args.table)
    before = digest(args.inputs)
    failed = 0
    for number, status, words, command in rows:
        if args.only and number != args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="spyre-dma-bad-") as tmp:
            argv = [args.tool] + [w.replace("{in}", args.inputs).replace("{data}", args.data).replace("{tmp}", tmp)
                                  for w in shlex.split(command)]
            problems = []
            try:
                r = subprocess.run(argv, cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   errors="replace", timeout=ROW_TIMEOUT_S)
                if r.returncode < 0:
                    problems.append(f"killed by signal {-r.returncode}")
                elif r.returncode != status:
                    problems.append(f"exit status {r.returncode}, expected {status}")
                for w in words:
                    if w not in r.stderr:
                        problems.append(f"standard error does not say '{w}'")
                err = r.stderr
            except subprocess.TimeoutExpired:
                problems.append(f"still running after {ROW_TIMEOUT_S} s (a hang)")
                err = ""
            left = sorted(os.listdir(tmp))
            if left:
                problems.append(f"left behind: {', '.join(left)}")
            if problems:
                failed += 1
                print(f"FAIL {args.table}:{number}: spyre-dma {command}")
                for p in problems:
                    print(f"  {p}")
                if err:
                    print("  stderr: " + err.strip().replace("\n", "\n          ")[:800])
    if digest(args.inputs) != before:
        failed += 1
        print(f"FAIL: the input files under {args.inputs} changed")
    ran = len(rows) if not args.only else 1
    print(f"{ran - failed} of {ran} bad invocations failed cleanly" if failed else f"all {ran} bad invocations failed cleanly")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
