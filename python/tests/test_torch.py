"""CPU torch tensors as host memory: zero-copy in place, registration of their storage."""

import pytest

import spyre_dma
from conftest import aligned

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_tensor_round_trip(engine, dtype):
    src = (torch.arange(10_000) % 251).to(dtype)
    dst = torch.zeros_like(src)
    buf = engine.allocate(src.numel() * src.element_size() + 128)
    s = engine.create_stream()
    s.copy_h2d(buf, src)
    s.copy_d2h(dst, buf)
    s.synchronize()
    assert torch.equal(src, dst)


def test_non_contiguous_tensor_is_refused(engine):
    t = torch.zeros(64, 64).t()
    buf = engine.allocate(64 * 64 * 4)
    with pytest.raises(spyre_dma.InvalidArgument, match=r"non-contiguous tensor \(shape torch.Size\(\[64, 64\]\)"):
        engine.create_stream().copy_h2d(buf, t)


def test_registered_tensor_storage_is_dma_d_directly(engine):
    t = torch.from_numpy(aligned(1 << 18, "<i4"))
    t.copy_(torch.arange(1 << 16, dtype=torch.int32))
    registered = engine.register_host(t)
    assert registered.size == t.numel() * 4
    back = torch.from_numpy(aligned(1 << 18, "<i4"))
    reg_back = engine.register_host(back)
    buf = engine.allocate(registered.size)
    s = engine.create_stream()
    s.copy_h2d(buf, t)
    s.copy_d2h(back, buf)
    s.synchronize()
    assert torch.equal(t, back)
    assert engine.stats()["bytes_staged"] == 0
    del reg_back


def test_state_dict_round_trip(sim):
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    s = sim.create_stream()
    on_device = {}
    for name, t in model.state_dict().items():
        nbytes = t.numel() * t.element_size()
        on_device[name] = sim.allocate((nbytes + 127) // 128 * 128)
        s.copy_h2d(on_device[name], t)
    restored = {name: torch.empty_like(t) for name, t in model.state_dict().items()}
    for name, t in restored.items():
        s.copy_d2h(t, on_device[name])
    s.synchronize()
    for name, t in model.state_dict().items():
        assert torch.equal(t, restored[name])


def test_set_or_collect_a_tensor_while_its_copy_is_in_flight(engine):
    # The copy holds the tensor's storage: set_() and collection cannot free the memory it writes,
    # so tensors allocated meanwhile (which would reuse freed memory) are never written.
    import gc
    n = 1 << 22
    buf = engine.allocate(n)
    s = engine.create_stream()
    s.fill(buf, 0x5A5A5A5A)
    for _ in range(8):
        t = torch.zeros(n, dtype=torch.uint8)
        s.copy_d2h(t, buf)
        t.set_(torch.empty(16, dtype=torch.uint8))
        del t
        gc.collect()
    others = [torch.zeros(n, dtype=torch.uint8) for _ in range(16)]
    s.synchronize()
    assert all(int(o.count_nonzero()) == 0 for o in others)
