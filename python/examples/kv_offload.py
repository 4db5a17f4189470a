#!/usr/bin/python3
"""KV-cache offload between two processes through a shared host pool.

    PYTHONPATH=<build>/python python3 python/examples/kv_offload.py [--backend refdev] [--blocks 64]

A prefill process computes KV blocks on its device (here: a fill whose pattern stands for the
block's content) and offloads each to the pool under its block hash; the slot is published only
once the copy has completed. A decode process, with its own engine and device, asks the pool for
every block: a hit is fetched to its device and counts only if the slot did not change during the
copy; a miss (not offloaded yet, evicted by a newer block of the same slot, or being written) is
recomputed. Every block the decode process ends up with is checked against what prefill computed.
The pool has fewer slots than there are blocks, so some blocks are evicted before decode asks.
"""

import argparse
import multiprocessing as mp
import os
import sys

import spyre_dma

BLOCK = 64 << 10


def content(block_hash):
    return (block_hash * 2654435761 + 12345) & 0xFFFFFFFF


def prefill(name, backend, hashes, ready):
    pool = spyre_dma.SharedHostPool.open(name)
    with spyre_dma.Engine(backend) as e:
        reg = pool.register_with(e)  # keep it: the copies are direct while it lives
        s = e.create_stream(name="prefill")
        kv = e.allocate(BLOCK)
        for h in hashes:
            s.fill(kv, content(h))
            op = pool.offload(s, h, kv)
            if op is not None:  # None: another writer holds the slot; the block stays on the device
                op.wait(timeout=60)
        del reg
    ready.set()


def decode(name, backend, hashes):
    pool = spyre_dma.SharedHostPool.open(name)
    hits = misses = 0
    with spyre_dma.Engine(backend) as e:
        reg = pool.register_with(e)
        s = e.create_stream(name="decode")
        kv = e.allocate(BLOCK)
        out = bytearray(BLOCK)
        for h in hashes:
            f = pool.fetch(s, h, kv)
            if f is not None:
                f.op.wait(timeout=60)
            if f is None or not f.valid():
                misses += 1
                s.fill(kv, content(h))  # recompute
            else:
                hits += 1
            s.copy_d2h(out, kv).wait(timeout=60)
            want = content(h).to_bytes(4, "little") * (BLOCK // 4)
            if bytes(out) != want:
                raise SystemExit(f"block {h:#x}: wrong bytes on the device after {'a hit' if f else 'a miss'}")
        del reg
    return hits, misses


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="refdev")
    p.add_argument("--blocks", type=int, default=64)
    p.add_argument("--slots", type=int, default=48)
    p.add_argument("--quick", action="store_true", help="16 blocks, 12 slots (CI: that it runs)")
    a = p.parse_args()
    blocks, slots = (16, 12) if a.quick else (a.blocks, a.slots)
    hashes = [0x9E3779B97F4A7C15 * (i + 1) & 0xFFFFFFFFFFFF for i in range(blocks)]
    name = f"spyre-dma-kv-{os.getpid()}"
    spyre_dma.SharedHostPool.remove(name)
    spyre_dma.SharedHostPool.create(name, slots=slots, slot_bytes=BLOCK)
    try:
        ctx = mp.get_context("spawn")
        ready = ctx.Event()
        writer = ctx.Process(target=prefill, args=(name, a.backend, hashes, ready))
        writer.start()
        if not ready.wait(timeout=300):
            raise SystemExit("prefill did not finish in 300 s")
        writer.join(timeout=60)
        if writer.exitcode != 0:
            raise SystemExit(f"prefill exited with {writer.exitcode}")
        hits, misses = decode(name, a.backend, hashes)
    finally:
        spyre_dma.SharedHostPool.remove(name)
    print(f"{blocks} blocks through a pool of {slots} slots: {hits} fetched, {misses} recomputed; every block checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
