"""The engine from Python: copies, fills, events, polling, callbacks, registration, lifetimes."""

import gc
import os
import sys
import threading
import time

import numpy as np
import pytest

import spyre_dma
from conftest import aligned


def round_trip(engine, src, dst=None, **alloc):
    src_bytes = memoryview(src).nbytes
    buf = engine.allocate(max(128, (src_bytes + 127) // 128 * 128), **alloc)
    dst = bytearray(src_bytes) if dst is None else dst
    s = engine.create_stream()
    s.copy_h2d(buf, src)
    s.copy_d2h(dst, buf)
    s.synchronize()
    return dst


@pytest.mark.parametrize("nbytes", [1, 4096, (1 << 20) + 3])
def test_round_trip_is_bit_exact(engine, nbytes):
    src = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    dst = np.zeros_like(src)
    round_trip(engine, src, dst)
    assert np.array_equal(src, dst)


def test_buffer_protocol_objects(engine):
    payload = bytes(range(256)) * 16
    assert bytes(round_trip(engine, payload)) == payload
    assert bytes(round_trip(engine, bytearray(payload))) == payload
    assert bytes(round_trip(engine, memoryview(payload)[128:])) == payload[128:]
    floats = np.linspace(0, 1, 1000, dtype=np.float64)
    out = np.empty_like(floats)
    round_trip(engine, floats, out)
    assert np.array_equal(floats, out)


def test_fill_d2d_and_offsets(engine):
    s = engine.create_stream()
    a = engine.allocate(8192)
    b = engine.allocate(8192)
    s.fill(a, 0x11223344)
    s.fill(a, 0xAABBCCDD, offset=4096, nbytes=256)
    s.copy_d2d(b, a, dst_offset=0, src_offset=0)
    out = np.zeros(8192 // 4, dtype="<u4")
    s.copy_d2h(out, b)
    s.synchronize()
    assert (out[:1024] == 0x11223344).all()
    assert (out[1024:1088] == 0xAABBCCDD).all()
    assert (out[1088:] == 0x11223344).all()


def test_bad_requests_are_typed_and_submit_nothing(engine):
    s = engine.create_stream()
    buf = engine.allocate(4096)
    src = np.zeros(4096, dtype=np.uint8)
    with pytest.raises(spyre_dma.InvalidArgument, match="not a multiple of 128") as e:
        s.copy_h2d(buf, src, dst_offset=3)
    assert e.value.code == spyre_dma.ErrorCode.INVALID_ARGUMENT
    assert isinstance(e.value, ValueError) and isinstance(e.value, spyre_dma.Error)
    with pytest.raises(spyre_dma.InvalidArgument, match="read-only bytes"):
        s.copy_d2h(b"\0" * 4096, buf)
    with pytest.raises(spyre_dma.InvalidArgument, match="non-contiguous ndarray"):
        s.copy_h2d(buf, np.zeros((64, 64), dtype=np.uint8)[:, ::2])
    with pytest.raises(spyre_dma.InvalidArgument, match="a list is not host memory"):
        s.copy_h2d(buf, [1, 2, 3])
    with pytest.raises(spyre_dma.InvalidArgument, match="nbytes 8192: more than the 4096 bytes of src"):
        s.copy_h2d(buf, src, nbytes=8192)
    with pytest.raises(spyre_dma.InvalidArgument, match="ordering \"sideways\""):
        engine.create_stream(ordering="sideways")
    assert engine.stats()["ops_submitted"] == 0
    s.synchronize()


def test_out_of_memory_names_the_size(engine):
    too_big = engine.limits()["device_memory_usable"] + (1 << 30)
    with pytest.raises(spyre_dma.OutOfMemory, match=str(too_big)) as e:
        engine.allocate(too_big)
    assert isinstance(e.value, MemoryError)


def test_scatter_gather_over_chunks(engine):
    buf = engine.allocate(64 << 10, max_chunk_bytes=8192)
    assert len(buf.chunks) == 8 and sum(c["size"] for c in buf.chunks) == 64 << 10
    src = np.random.default_rng(3).integers(0, 256, 64 << 10, dtype=np.uint8)
    dst = np.zeros_like(src)
    s = engine.create_stream()
    s.copy_h2d(buf, src)
    s.copy_d2h(dst, buf)
    s.synchronize()
    assert np.array_equal(src, dst)


def test_registered_memory_is_not_staged(engine):
    pinned = engine.allocate_host(1 << 16)
    view = np.frombuffer(pinned, dtype=np.uint8)
    view[:] = np.arange(1 << 16, dtype=np.uint64).astype(np.uint8)
    array = aligned(1 << 16)
    registered = engine.register_host(array)
    buf = engine.allocate(1 << 16)
    s = engine.create_stream()
    s.copy_h2d(buf, pinned)
    s.copy_d2h(array, buf)
    s.synchronize()
    assert np.array_equal(array, view)
    assert engine.stats()["bytes_staged"] == 0
    registered.release()
    s.copy_d2h(array, buf)  # released: staged now, still correct
    s.synchronize()
    assert engine.stats()["bytes_staged"] == 1 << 16


def test_memory_of_a_dropped_object_lives_until_its_op_completes(engine):
    buf = engine.allocate(1 << 20)
    s = engine.create_stream()
    s.copy_h2d(buf, np.full(1 << 20, 7, dtype=np.uint8))  # no reference kept
    gc.collect()
    out = np.zeros(1 << 20, dtype=np.uint8)
    s.copy_d2h(out, buf)
    s.synchronize()
    assert (out == 7).all()


def test_callbacks_run_once_with_the_status(engine):
    seen = []
    buf = engine.allocate(4096)
    s = engine.create_stream()
    s.fill(buf, 1, on_complete=lambda st: seen.append(("fill", st.ok, st.code)))
    s.host_callback(lambda: seen.append(("host",)))
    s.synchronize()
    # A host callback runs once the fill has completed; the fill's on_complete may run before or
    # after it (both run on engine threads, in no promised order).
    assert sorted(seen) == [("fill", True, spyre_dma.ErrorCode.OK), ("host",)]


def test_a_raising_on_complete_does_not_break_the_engine(engine, monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append((str(u.exc_value), str(u.object))))
    buf = engine.allocate(4096)
    s = engine.create_stream()

    def bad(status):
        raise RuntimeError("a bug in a completion callback")

    s.fill(buf, 1, on_complete=bad)
    s.synchronize()
    assert bytes(round_trip(engine, b"q" * 256)) == b"q" * 256
    # Reported the way Python reports exceptions it cannot raise (sys.unraisablehook).
    assert len(reported) == 1 and "a bug in a completion callback" in reported[0][0]
    assert "on_complete callback of a spyre_dma op" in reported[0][1]


def test_a_failing_host_callback_fails_its_op(engine):
    s = engine.create_stream()

    def boom():
        raise RuntimeError("boom from Python")

    op = s.host_callback(boom)
    with pytest.raises(spyre_dma.CallbackFailed, match="boom from Python"):
        op.wait(timeout=30)
    with pytest.raises(spyre_dma.CallbackFailed, match="boom from Python"):
        s.synchronize()
    assert op.status().code == spyre_dma.ErrorCode.CALLBACK_FAILED
    s.synchronize()  # cleared by the previous synchronize


def test_events_order_streams_and_time_them(engine):
    a, b = engine.create_stream(name="a"), engine.create_stream(name="b")
    buf = engine.allocate(1 << 20)
    start, end = engine.create_event(), engine.create_event()
    a.record(start)
    a.fill(buf, 0x01010101)
    a.record(end)
    b.wait(end)
    out = np.zeros(1 << 20, dtype=np.uint8)
    b.copy_d2h(out, buf)
    b.synchronize()
    assert (out == 1).all()
    assert end.query()
    assert end.elapsed_since(start) > 0
    assert start.elapsed_since(end) == -end.elapsed_since(start)
    with pytest.raises(spyre_dma.InvalidArgument):
        engine.create_event().elapsed_since(start)


def test_batch_rings_one_doorbell_per_pipeline(engine):
    buf = engine.allocate(128 * 32)
    s = engine.create_stream()
    s.synchronize()
    before = engine.stats()["doorbells"]
    with engine.batch():
        for i in range(16):
            s.fill(buf, i, offset=128 * i, nbytes=128)
    s.synchronize()
    assert engine.stats()["doorbells"] - before < 16


def test_reset_then_new_work_succeeds(engine):
    engine.reset()
    buf = engine.allocate(4096)
    assert bytes(round_trip(engine, b"x" * 4096)) == b"x" * 4096
    assert buf.size == 4096


def test_closed_engine_fails_with_closed():
    e = spyre_dma.Engine("refdev")
    s = e.create_stream()
    buf = e.allocate(4096)
    e.close()
    assert e.closed
    with pytest.raises(spyre_dma.Closed):
        s.fill(buf, 0)
    with pytest.raises(spyre_dma.Closed):
        e.allocate(4096)
    e.close()  # idempotent


@pytest.mark.parametrize("backend", ["refdev", "sim"])
def test_close_refuses_new_work_at_once_while_threads_submit(backend):
    e = spyre_dma.Engine(backend)
    dev = e.allocate(1 << 20)
    src = e.allocate_host(4096)
    ended = []

    def submit_until_refused():
        s = e.create_stream()
        try:
            while True:
                s.copy_h2d(dev, src, nbytes=4096)
        except spyre_dma.Closed:
            ended.append(time.monotonic())

    threads = [threading.Thread(target=submit_until_refused) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    e.close()
    took = time.monotonic() - t0
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a thread still submits after close()"
    assert len(ended) == 4
    # The work queued before the close finishes (on sim, in simulated time); nothing new is taken.
    assert took < 10, f"close() took {took:.1f} s"


def test_release_refuses_while_a_view_is_alive(engine):
    hb = engine.allocate_host(4096)
    view = np.frombuffer(hb, dtype=np.uint8)
    with pytest.raises(BufferError, match="1 export"):
        hb.release()
    assert view[0] == view[0]  # still readable: nothing was released
    del view
    gc.collect()
    hb.release()
    with pytest.raises(BufferError, match="released"):
        memoryview(hb)


def test_read_only_memory_registers_read_only(engine):
    frozen = aligned(8192, "u1")
    frozen.setflags(write=False)
    dev = engine.allocate(4096)
    s = engine.create_stream()
    for memory in (frozen, memoryview(bytes(8192))):
        hb = engine.register_host(memory)
        assert not hb.writable
        with pytest.raises(spyre_dma.InvalidArgument, match="read-only"):
            s.copy_d2h(hb, dev, nbytes=4096)
        s.copy_h2d(dev, hb, nbytes=4096)  # reading it is fine
        assert memoryview(hb).readonly
    s.synchronize()
    assert not frozen.any()


def test_a_second_simulation_is_a_backend_error():
    first = spyre_dma.Engine("sim")
    try:
        with pytest.raises(spyre_dma.BackendError, match="one simulated server per process at a time"):
            spyre_dma.Engine("sim")
    finally:
        first.close()
    spyre_dma.Engine("sim").close()  # once the first is closed, a new one opens


def test_backend_errors_name_what_is_wrong():
    with pytest.raises(spyre_dma.BackendError, match="nosuch"):
        spyre_dma.Engine("nosuch")
    with pytest.raises(spyre_dma.BackendError, match="preset"):
        spyre_dma.Engine("refdev", preset="gen4x16")
    with pytest.raises(spyre_dma.BackendError, match="gen9x99"):
        spyre_dma.Engine("sim", preset="gen9x99")
    with pytest.raises(spyre_dma.InvalidArgument, match="completion \"sometimes\""):
        spyre_dma.Engine("refdev", completion="sometimes")


def test_polling_alone_advances_a_simulated_device(sim):
    buf = sim.allocate(1 << 20)
    s = sim.create_stream()
    before = sim.simulated_time_ns()
    op = s.fill(buf, 5)
    polls = 0
    while not op.done():  # no thread waits: each poll is a step of the simulation
        polls += 1
        assert polls < 10_000_000
    assert op.status().ok
    assert s.query()
    assert sim.simulated_time_ns() > before


def test_simulated_times_are_deterministic():
    def run():
        with spyre_dma.Engine("sim") as e:
            buf = e.allocate(1 << 20)
            s = e.create_stream()
            t0, t1 = e.create_event(), e.create_event()
            s.record(t0)
            s.copy_h2d(buf, np.ones(1 << 20, dtype=np.uint8))
            s.record(t1)
            s.synchronize()
            return t1.elapsed_since(t0), e.simulated_time_ns()

    assert run() == run()


def test_the_gil_is_released_while_waiting(engine):
    # The host callback needs the GIL on an engine thread (refdev) while this thread waits, and a
    # second Python thread keeps running meanwhile.
    s = engine.create_stream()
    with engine.batch():  # the fill reaches the device after the callback is queued behind it
        s.fill(engine.allocate(1 << 20), 0x5A5A5A5A)
        s.host_callback(lambda: time.sleep(0.3))
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    s.synchronize(timeout=30)
    stop.set()
    t.join()
    assert len(ticks) > 10


@pytest.mark.parametrize("wait", ["stream", "engine", "op", "event"])
def test_ctrl_c_ends_a_wait_and_the_work_goes_on(refdev, wait):
    import signal
    s = refdev.create_stream()
    # A host callback submitted to an idle stream runs on the submitting thread: a helper's, so
    # that this (the main) thread, where Python runs signal handlers, never runs it.
    started = threading.Event()
    helper = threading.Thread(target=lambda: s.host_callback(lambda: (started.set(), time.sleep(2))))
    helper.start()
    assert started.wait(10)
    op = s.fill(refdev.allocate(1 << 20), 0x5A5A5A5A)  # held behind the callback
    ev = refdev.create_event()
    s.record(ev)
    waits = {"stream": lambda: s.synchronize(timeout=30), "engine": lambda: refdev.synchronize(timeout=30),
             "op": lambda: op.wait(timeout=30), "event": lambda: ev.synchronize(timeout=30)}
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        waits[wait]()
    took = time.monotonic() - t0
    timer.join()
    assert took < 1.5, f"the wait ended {took:.2f} s after it began (Ctrl-C at 0.2 s, work until 2 s)"
    helper.join()
    s.synchronize(timeout=30)  # the work itself went on
    assert op.done()


def test_wait_timeout_is_typed(refdev):
    # An op queued behind a host callback that another thread is running (and holds) cannot
    # complete within a short wait.
    s = refdev.create_stream()
    buf = refdev.allocate(64 << 20)
    started, release = threading.Event(), threading.Event()
    with refdev.batch():  # the fill reaches the device after the callback is queued behind it
        s.fill(buf, 0x5A5A5A5A)
        s.host_callback(lambda: (started.set(), release.wait(30)))
        later = s.fill(buf, 1, nbytes=4096)
    waiter = threading.Thread(target=lambda: s.synchronize(timeout=60))
    waiter.start()
    assert started.wait(30)
    with pytest.raises(spyre_dma.WaitTimeout) as e:
        later.wait(timeout=0.05)
    assert e.value.code == spyre_dma.ErrorCode.WAIT_TIMEOUT
    release.set()
    waiter.join()
    later.wait(timeout=30)
    assert later.status().ok


def test_stats_limits_and_options(engine):
    limits = engine.limits()
    assert limits["max_cb_bytes"] > 0 and len(limits["ring_slots"]) == 3
    assert engine.options["staging_buffers"] == 8
    assert engine.stats()["ops_submitted"] == 0
    round_trip(engine, b"y" * 1024)
    st = engine.stats()
    assert st["ops_completed"] == 2 and st["bytes_h2d"] == 1024 and st["bytes_d2h"] == 1024


def test_device_statistics_on_the_model(sim):
    round_trip(sim, b"z" * 4096)
    stats = sim.device_statistics()
    assert isinstance(stats, dict) and stats


def test_close_while_another_thread_waits(refdev):
    # The waiter keeps the engine alive until its wait returns; close() does not pull it away.
    s = refdev.create_stream()
    buf = refdev.allocate(64 << 20)
    release = threading.Event()
    with refdev.batch():  # the fill reaches the device after the callback is queued behind it
        s.fill(buf, 0x5A5A5A5A)
        s.host_callback(lambda: release.wait(30))
    results = []

    def wait():
        try:
            refdev.synchronize(timeout=60)
            results.append("ok")
        except spyre_dma.Error as e:
            results.append(type(e).__name__)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    closer = threading.Thread(target=refdev.close)
    closer.start()
    time.sleep(0.1)
    release.set()
    waiter.join(60)
    closer.join(60)
    assert not waiter.is_alive() and not closer.is_alive()
    assert results in (["ok"], ["Cancelled"], ["Closed"])
    assert refdev.closed
    with pytest.raises(spyre_dma.Closed):
        refdev.synchronize()


def test_a_propagating_stream_fails_what_follows_a_failure(engine):
    # docs/engine.md, "When an op fails": DependencyFailed names the op that failed first; nothing
    # behind it runs, on its stream or on a stream that waits on an event recorded behind it.
    a = engine.create_stream(on_failure="propagate")
    b = engine.create_stream(on_failure="propagate")
    buf = engine.allocate(4096)
    a.fill(buf, 0x01010101).wait(timeout=30)
    ev = engine.create_event()

    def boom():
        raise RuntimeError("no input")

    bad = a.host_callback(boom)
    after = a.fill(buf, 0x02020202)
    a.record(ev)
    b.wait(ev)
    out = np.full(4096, 0x5A, dtype=np.uint8)
    d2h = b.copy_d2h(out, buf)
    with pytest.raises(spyre_dma.CallbackFailed, match="no input"):
        bad.wait(timeout=30)
    for op in (after, d2h):
        with pytest.raises(spyre_dma.DependencyFailed) as e:
            op.wait(timeout=30)
        assert e.value.failed_op == bad.id and "no input" in e.value.message
        assert op.status().failed_op == bad.id
    assert (out == 0x5A).all()
    with pytest.raises(spyre_dma.DependencyFailed):
        ev.synchronize()
    with pytest.raises(spyre_dma.CallbackFailed):
        a.synchronize()
    with pytest.raises(spyre_dma.DependencyFailed):
        b.synchronize()
    b.copy_d2h(out, buf).wait(timeout=30)  # each synchronize cleared its stream
    assert (out == 0x01).all()
    with pytest.raises(spyre_dma.InvalidArgument, match="on_failure"):
        engine.create_stream(on_failure="sometimes")



def test_stalls_is_empty_when_every_stream_moves(engine):
    # docs/engine.md, "Stalls" (the C++ tests Stalls.* hold a stream behind a host task nobody
    # ends); from Python: the query's form, and nothing named once the work is done.
    a = engine.create_stream(name="weights")
    buf = engine.allocate(4096)
    a.fill(buf, 0x01010101)
    assert all(s["ops_pending"] >= 1 and s["text"].startswith("stream ") for s in engine.stalls(idle_for=0))
    a.synchronize(timeout=30)
    assert engine.stalls(idle_for=0) == []
    assert engine.stalls() == []


def test_streams_sharing_a_buffer_are_ordered_by_footprint():
    # docs/engine.md, "Ordering by footprint": no event between the writer and the reader.
    with spyre_dma.Engine("refdev", order_by_footprint=True) as e:
        assert e.options["order_by_footprint"] is True
        writer, reader = e.create_stream(), e.create_stream()
        buf = e.allocate(1 << 20)
        src = e.allocate_host(1 << 20)
        out = e.allocate_host(1 << 20)
        memoryview(src)[:] = bytes(range(256)) * 4096
        with e.batch():  # the write is still live when the read is submitted (no doorbell yet)
            writer.copy_h2d(buf, src)
            reader.copy_d2h(out, buf)
        e.synchronize(timeout=30)
        assert bytes(memoryview(out)) == bytes(memoryview(src))
        assert e.stats()["footprint_waits"] == 1


def test_pooled_streams_come_in_turn_per_class(engine):
    low = [engine.pooled_stream() for _ in range(33)]
    high = engine.pooled_stream(high_priority=True)
    assert low[0].id == low[32].id and low[0].id != low[1].id  # 32 per class by default
    assert high.priority == 1 and low[5].priority == 0


def test_lower_priority_streams_keep_to_the_ring_share():
    # docs/engine.md, "Priority": while a higher stream is active, lower ones use CBs of half the share.
    with spyre_dma.Engine("refdev", priority_share_bytes=64 << 10, priority_hold=3600.0) as e:
        assert e.options["priority_share_bytes"] == 64 << 10
        high = e.create_stream(priority=10)
        high.copy_h2d(e.allocate(4096), e.allocate_host(4096)).wait(timeout=30)
        lows = [e.create_stream(priority=0) for _ in range(4)]
        before = e.stats()["cbs_submitted"]
        for s in lows:
            s.copy_h2d(e.allocate(1 << 20), e.allocate_host(1 << 20))
        e.synchronize(timeout=30)
        assert e.stats()["cbs_submitted"] - before == 4 * (1 << 20) // (32 << 10)
        assert e.stats()["priority_yields"] > 0


def test_a_shared_host_pool_publishes_a_slot_once_its_copy_completed():
    # docs/engine.md, "A shared host pool" (the C++ tests kill writers at random points).
    name = f"spyre-dma-pytest-{os.getpid()}"
    spyre_dma.SharedHostPool.remove(name)
    pool = spyre_dma.SharedHostPool.create(name, slots=4, slot_bytes=64 << 10)
    try:
        reader = spyre_dma.SharedHostPool.open(name)
        with spyre_dma.Engine("refdev") as e:
            reg = pool.register_with(e)
            assert reg is not None
            s = e.create_stream()
            src = e.allocate(4096)
            s.fill(src, 0x01020304)
            out = bytearray(64 << 10)
            assert reader.read(7, out) is None
            op = pool.offload(s, 7, src)
            op.wait(timeout=30)
            assert reader.published() == 1
            assert reader.read(7, out) == 4096
            assert bytes(out[:8]) == bytes([4, 3, 2, 1, 4, 3, 2, 1])
            back = e.allocate(4096)
            f = reader.fetch(s, 7, back)
            f.op.wait(timeout=30)
            assert f.valid() and f.nbytes == 4096
            assert reader.fetch(s, 8, back) is None
    finally:
        spyre_dma.SharedHostPool.remove(name)
