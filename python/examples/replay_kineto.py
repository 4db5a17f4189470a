#!/usr/bin/python3
"""Replays a PyTorch profiler (Kineto) trace on the simulated device and plots captured against
simulated copy times.

    PYTHONPATH=<build>/python python3 python/examples/replay_kineto.py [TRACE.json[.gz]] [--link "PCIe Gen4 x16"]
        [--preset gen4x16] [--out replay.png]

By default it takes the A100 AlexNet profile in traces/data. The trace's copies and kernels are
replayed through the engine on the model (the preset its link suggests, unless --preset or
--config names one); the comparison's table is printed and a scatter of captured against simulated
duration per copy is written to --out (atomically).
"""

import argparse
import os
import sys

import spyre_dma

DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "traces", "data",
                       "benchmark_result_2869224_1695835535_trace.json.gz")


def plot(frame, title, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    for direction, group in frame.groupby("direction"):
        measured = group[~group["bound"]]
        ax.scatter(measured["captured_ns"] / 1e3, measured["simulated_ns"] / 1e3, label=direction, s=18)
        bounds = group[group["bound"]]
        if len(bounds):
            ax.scatter(bounds["captured_ns"] / 1e3, bounds["simulated_ns"] / 1e3, marker="v", s=18,
                       label=f"{direction} (captured: at most one tick)")
    lo = max(1e-3, min(frame["captured_ns"].min(), frame["simulated_ns"].min()) / 1e3 / 2)
    hi = max(frame["captured_ns"].max(), frame["simulated_ns"].max()) / 1e3 * 2
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8, label="simulated = captured")
    ax.set(xscale="log", yscale="log", xlabel="captured duration (us)", ylabel="simulated duration (us)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    base, ext = os.path.splitext(out)
    tmp = f"{base}.tmp{os.getpid()}{ext}"  # same folder and extension, renamed into place
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", nargs="?", default=DEFAULT, help="a Kineto Chrome-trace JSON (plain or gzip)")
    p.add_argument("--link", default="PCIe Gen4 x16", help="the captured machine's link (picks the base preset)")
    p.add_argument("--preset")
    p.add_argument("--config")
    p.add_argument("--out", default="replay_kineto.png")
    p.add_argument("--quick", action="store_true", help="burst fidelity (CI: that it runs)")
    a = p.parse_args()
    trace, report = spyre_dma.import_kineto(a.trace, link=a.link)
    print(f"{os.path.basename(a.trace)}: {report['memcpy']} copies, {report['memset']} memsets, "
          f"{report['kernels']} kernels imported")
    result = spyre_dma.replay(trace, preset=a.preset, config=a.config, fidelity="burst" if a.quick else None)
    print(result.summary().strip())
    comparison = spyre_dma.compare(trace, result)
    print(comparison.table(), end="")
    plot(comparison.to_frame(), f"{os.path.basename(a.trace)} on the model", a.out)
    print(f"plot: {a.out}")
    return 0 if result.data_ok else 1


if __name__ == "__main__":
    sys.exit(main())
