#!/usr/bin/python3
"""Copies between registered host memory and one simulated device: H2D alone, D2H alone, then both
at once on two streams, printing each copy's GB/s by the device's (simulated) clock.

    PYTHONPATH=<build>/python python3 python/examples/bidirectional.py [--preset gen4x16] [--mib 256]

The third line is what nvbandwidth's host_to_device_bidirectional_memcpy_ce and
device_to_host_bidirectional_memcpy_ce measure on a GPU: one direction's copy while the other runs
(nvbandwidth makes the other copy twice as long; here they are the same size, started together).
docs/validation.md ("Both directions at once") compares the model with published figures.
"""

import argparse
import sys

import spyre_dma


def run(directions, nbytes, preset):
    """GB/s of each direction's copy, all started together (one stream each)."""
    with spyre_dma.Engine("sim", preset=preset) as e:
        ops = {}
        for d in directions:
            s = e.create_stream(name=d)
            dev = e.allocate(nbytes)
            host = e.allocate_host(nbytes)
            ops[d] = s.copy_h2d(dev, host) if d == "h2d" else s.copy_d2h(host, dev)
        for op in ops.values():
            op.wait()  # raises the op's error, if it failed
        return {d: nbytes / (op.device_end_ns - op.device_start_ns) for d, op in ops.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="gen4x16", help="model preset (default gen4x16)")
    p.add_argument("--mib", type=int, default=256, help="bytes per copy, in MiB (default 256)")
    p.add_argument("--quick", action="store_true", help="16 MiB copies (a smoke run)")
    a = p.parse_args()
    if a.mib <= 0:
        p.error(f"--mib {a.mib}: must be positive")
    nbytes = (16 if a.quick else a.mib) << 20
    print(f"preset {a.preset}, {nbytes >> 20} MiB per copy, registered host memory, GB/s by simulated time")
    for label, directions in (("H2D alone", ["h2d"]), ("D2H alone", ["d2h"]), ("both at once", ["h2d", "d2h"])):
        rates = run(directions, nbytes, a.preset)
        print(f"  {label:<13} " + "  ".join(f"{d.upper()} {g:6.2f}" for d, g in rates.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
