#include "engine_fixture.hpp"
namespace spyre_dma::test {
TEST(Dbg, QueueFull) {
  constexpr std::uint64_t n = 32 * MiB, tail = 4096;
  EngineOptions o;
  o.ring_slots = {16, 16, 2};
  Rig rig = make_rig(o);
  Engine& e = *rig.engine;
  Stream s = e.create_stream();
  DeviceBuffer buf = e.allocate(n);
  HostBuffer old_data = e.allocate_host(n), out = e.allocate_host(n), fresh = e.allocate_host(tail);
  fill_pattern(old_data.data(), n, 1);
  fill_pattern(fresh.data(), tail, 2);
  SPYRE_ASSERT_OK(s.copy_h2d(buf, 0, old_data.data(), n).wait(kWait));
  rig.spy->clear();
  Op a, b;
    a = s.copy_d2h(out.data(), buf, 0, n);
    b = s.copy_h2d(buf, n - tail, fresh.data(), tail);
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  for (auto& c : rig.spy->cbs()) printf("pipe %d tag %u barrier %d bytes %lu db %lu\n", int(c.pipe), c.tag, c.barrier, c.bytes, c.doorbell);
  printf("a %lu-%lu b %lu-%lu\n", a.device_start_ns(), a.device_end_ns(), b.device_start_ns(), b.device_end_ns());
  EXPECT_TRUE(bytes_equal(old_data.data(), out.data(), n));
}
}
