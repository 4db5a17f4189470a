#!/usr/bin/python3
"""Moves a small model's state_dict to the simulated device and back, printing the simulated time
of each tensor's copies.

    PYTHONPATH=<build>/python python3 python/examples/state_dict_to_device.py [--backend sim] [--preset gen4x16]

Each tensor gets a device buffer; its H2D and D2H are timed by the device (Op.device_start_ns and
device_end_ns: simulated time on sim and rtl), and what comes back must equal what went.
"""

import argparse
import sys

import torch

import spyre_dma


def small_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
        torch.nn.Linear(64 * 16, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="sim")
    p.add_argument("--preset", help="model preset (sim, rtl), e.g. gen4x16")
    p.add_argument("--quick", action="store_true", help="(the example is small already; accepted for CI)")
    a = p.parse_args()
    torch.manual_seed(0)
    state = small_model().state_dict()
    kwargs = {"preset": a.preset} if a.preset else {}
    with spyre_dma.Engine(a.backend, **kwargs) as engine:
        stream = engine.create_stream(name="weights")
        on_device, h2d = {}, {}
        for name, t in state.items():
            t = t.contiguous()
            on_device[name] = engine.allocate(max(128, (t.numel() * t.element_size() + 127) // 128 * 128))
            h2d[name] = stream.copy_h2d(on_device[name], t)
        back = {name: torch.empty_like(t) for name, t in state.items()}
        d2h = {name: stream.copy_d2h(back[name], on_device[name]) for name in state}
        stream.synchronize()
        print(f"{engine.device_name}")
        print(f"{'tensor':<22} {'shape':<18} {'dtype':<9} {'bytes':>9} {'H2D us':>9} {'D2H us':>9} {'GB/s':>6}")
        total_bytes, total_ns, ok = 0, 0, True
        for name, t in state.items():
            nbytes = t.numel() * t.element_size()
            up = h2d[name].device_end_ns - h2d[name].device_start_ns
            down = d2h[name].device_end_ns - d2h[name].device_start_ns
            same = torch.equal(t, back[name])
            ok &= same
            total_bytes += 2 * nbytes
            total_ns += up + down
            print(f"{name:<22} {str(tuple(t.shape)):<18} {str(t.dtype).replace('torch.', ''):<9} {nbytes:>9} "
                  f"{up / 1e3:>9.2f} {down / 1e3:>9.2f} {2 * nbytes / max(1, up + down):>6.2f}"
                  f"{'' if same else '  MISMATCH'}")
        sim = engine.simulated_time_ns()
        print(f"{len(state)} tensors, {total_bytes} bytes moved in {total_ns / 1e3:.1f} us of device time"
              + (f", {sim / 1e3:.1f} us simulated in all" if sim is not None else "")
              + f"; data {'equal' if ok else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
