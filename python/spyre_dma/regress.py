"""The regression runner's results from Python.

``regress()`` runs ``spyre-dma regress`` (its worker processes, one test per seed, every checker
attached) and returns the results document it writes with ``--json``; ``read_regress_results()``
reads such a document written earlier (by any run, merged shards included); ``regress_frame()``
lays its tests out as a pandas DataFrame, one row per test.
"""

import json
import os
import subprocess
import tempfile

from ._native import Error


def _cli():
    from . import _build_info

    return _build_info.cli


def read_regress_results(path):
    """Reads a results document (``spyre-dma regress --json``). Raises ValueError naming the file
    when it is not one."""
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    if not isinstance(doc, dict) or "tests" not in doc or "summary" not in doc:
        raise ValueError(f"{path}: not a spyre-dma regress results document (no 'tests' and 'summary')")
    return doc


def regress(suite="smoke", backend="refdev", *, seeds=None, jobs=1, timeout=600.0, args=(), wall_timeout=None):
    """Runs a regression suite and returns its results document (a dict: summary, tests,
    coverage, ...). ``seeds`` is "A..B" or "A" (default: the suite's range), ``jobs`` the worker
    processes, ``timeout`` the seconds one test may take, ``args`` any further command-line
    options (``["--preset", "gen4x16"]``). Failing tests are reported in the document, not raised;
    a run that cannot start (a bad option) raises spyre_dma.Error with the command's message.
    ``wall_timeout`` bounds the whole run (seconds; None: none) and raises WaitTimeout past it."""
    from ._native import WaitTimeout

    with tempfile.TemporaryDirectory(prefix="spyre-dma-regress-") as tmp:
        out = os.path.join(tmp, "results.json")
        cmd = [_cli(), "regress", "--suite", suite, "--backend", backend, "--jobs", str(jobs), "--timeout",
               str(timeout), "--json", out, "--progress", "none", *args]
        if seeds is not None:
            cmd += ["--seeds", str(seeds)]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=wall_timeout, check=False)
        except subprocess.TimeoutExpired:
            raise WaitTimeout(f"regress --suite {suite} --backend {backend}: still running after {wall_timeout} s") from None
        if not os.path.exists(out):
            raise Error((run.stderr or run.stdout).strip() or f"spyre-dma regress exited with {run.returncode}")
        return read_regress_results(out)


def regress_frame(results):
    """One row per test of a results document (dict or path): suite, backend, seed, status,
    finding_count, the test's metrics (ops, bytes, sim_time_ns, wall_s, ...) and its time per
    phase (setup_s, run_s, check_s, teardown_s)."""
    import pandas

    if not isinstance(results, dict):
        results = read_regress_results(results)
    rows = []
    for t in results["tests"]:
        row = {k: t.get(k) for k in ("suite", "backend", "seed", "name", "status", "finding_count", "repro")}
        metrics = dict(t.get("metrics", {}))
        for phase, seconds in metrics.pop("phases_s", {}).items():
            row[f"{phase}_s"] = seconds
        faults = metrics.pop("faults_injected", {})
        row.update(metrics)
        row["faults_injected"] = sum(faults.values()) if faults else 0
        rows.append(row)
    return pandas.DataFrame(rows)
