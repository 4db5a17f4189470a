#!/usr/bin/env python3
"""An interrupted regression keeps what finished: runs `spyre-dma regress` with workers, sends it
SIGINT (or SIGTERM) once some tests have finished, and checks that it exits 128 + the signal within
a bound, that its JSON report reads, says it is incomplete and holds every test the progress lines
reported as finished, that its JUnit report parses and says it is incomplete, and that no
temporary file is left beside them. Exit status 0 when every check holds; 1 otherwise, naming it.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

FINISH_TIMEOUT_S = 60   # from the signal to the process's exit
START_TIMEOUT_S = 120   # until the first tests have finished


def run_once(tool, sig, folder):
    report, junit = os.path.join(folder, "r.json"), os.path.join(folder, "r.xml")
    cmd = [tool, "regress", "--suite", "smoke", "--backend", "refdev", "--seeds", "1..100000", "-j", "2",
           "--progress", "lines", "--json", report, "--junit", junit]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=folder)
    finished, errors = [], []
    deadline = time.monotonic() + START_TIMEOUT_S
    # Progress lines ("PASS smoke refdev seed 3: ..."): a test counts as finished once reported.
    for line in proc.stderr:
        if line.startswith(("PASS ", "FAIL ", "SKIP ")):
            finished.append(line.split(":")[0].split(" ", 3)[3])
            if len(finished) == 3:
                proc.send_signal(sig)
                break
        if time.monotonic() > deadline:
            break
    if len(finished) < 3:
        proc.kill()
        return [f"{sig.name}: fewer than 3 tests finished in {START_TIMEOUT_S} s"]
    # The rest of its standard error, then its exit; a process still there at the bound is killed.
    killer = threading.Timer(FINISH_TIMEOUT_S, proc.kill)
    killer.start()
    rest = proc.stderr.read()
    proc.wait()
    hung = not killer.is_alive()
    killer.cancel()
    if hung:
        return [f"{sig.name}: still running {FINISH_TIMEOUT_S} s after the signal"]
    for line in rest.splitlines():  # tests that finished before the workers were stopped
        if line.startswith(("PASS ", "FAIL ", "SKIP ")):
            finished.append(line.split(":")[0].split(" ", 3)[3])
    if proc.returncode != 128 + sig.value:
        errors.append(f"{sig.name}: exit status {proc.returncode}, expected {128 + sig.value}")
    try:
        with open(report, encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("complete") is not False or doc.get("interrupted") != sig.name:
            errors.append(f"{sig.name}: the JSON report does not say it was interrupted: "
                          f"complete={doc.get('complete')!r}, interrupted={doc.get('interrupted')!r}")
        names = {t.get("name") for t in doc.get("tests", [])}
        missing = [n for n in finished if n not in names]
        if missing:
            errors.append(f"{sig.name}: finished tests missing from the JSON report: {missing[:5]}")
    except (OSError, ValueError) as e:
        errors.append(f"{sig.name}: the JSON report does not read: {e}")
    try:
        root = ET.parse(junit).getroot()
        props = [p.get("value", "") for p in root.iter("property") if p.get("name") == "incomplete"]
        if not any(sig.name in v for v in props):
            errors.append(f"{sig.name}: the JUnit report has no 'incomplete' property naming {sig.name}")
    except (OSError, ET.ParseError) as e:
        errors.append(f"{sig.name}: the JUnit report does not parse: {e}")
    stray = sorted(set(os.listdir(folder)) - {"r.json", "r.xml"})
    if stray:
        errors.append(f"{sig.name}: files left beside the reports: {stray}")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", required=True, help="the spyre-dma executable")
    args = ap.parse_args()
    errors = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with tempfile.TemporaryDirectory() as folder:
            errors += run_once(os.path.abspath(args.tool), sig, folder)
    for e in errors:
        print("FAIL " + e)
    if not errors:
        print("interrupted regressions (SIGINT, SIGTERM) kept every finished test, marked incomplete")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
