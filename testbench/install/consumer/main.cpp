// Uses the installed SpyreDma package the way the README's example does: opens an engine on the
// reference device, moves a buffer to the device and back, and checks the bytes. It also encodes
// a control block through the contract API, which the model and trace tools use directly. Where
// the package has the simulator, it opens `sim` in process by name and does the same there.
#include <spyre_dma/hw/contract.hpp>
#include <spyre_dma/refdev/ref_device.hpp>
#include <spyre_dma/spyre_dma.hpp>

#include <cstdio>
#include <vector>

#ifdef SPYRE_DMA_CONSUMER_SIM
#include <spyre_dma/backend/builtin.hpp>

// The simulator, in this process, through the registry of the installed build's backends.
static int round_trip_on_sim() {
  using namespace spyre_dma;
  backend::Instance sim = backend::builtin().open("sim", {});
  auto engine = Engine::open(sim.device);
  Stream stream = engine->create_stream();
  DeviceBuffer buf = engine->allocate(64 << 10);
  std::vector<std::uint8_t> host(64 << 10), back(64 << 10);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint8_t>(i * 13);
  stream.copy_h2d(buf, 0, host.data(), host.size());
  stream.copy_d2h(back.data(), buf, 0, back.size());
  if (Status s = stream.synchronize(std::chrono::seconds(60)); !s.ok() || back != host) {
    std::fprintf(stderr, "consumer: sim round trip failed: %s\n", s.to_string().c_str());
    return 1;
  }
  const double ns = sim.clock ? sim.clock->now_ns() : 0.0;
  if (ns <= 0) {
    std::fprintf(stderr, "consumer: the simulated clock did not move\n");
    return 1;
  }
  std::printf("consumer: 64 KiB round trip on the installed simulator ok, %.0f ns simulated\n", ns);
  return 0;
}
#endif

int main() {
  using namespace spyre_dma;
  if (hw::encode(hw::ControlBlock{}).size() != hw::kCbBytes) {
    std::fprintf(stderr, "consumer: encoded CB is not 128 bytes\n");
    return 1;
  }

  auto engine = Engine::open(std::make_shared<refdev::RefDevice>());
  Stream stream = engine->create_stream();
  DeviceBuffer weights = engine->allocate(1 << 20);

  std::vector<std::uint8_t> host(1 << 20), back(1 << 20);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint8_t>(i * 31);
  stream.copy_h2d(weights, 0, host.data(), host.size());
  stream.copy_d2h(back.data(), weights, 0, back.size());
  if (Status s = stream.synchronize(); !s.ok()) {
    std::fprintf(stderr, "consumer: %s\n", s.to_string().c_str());
    return 1;
  }
  if (back != host) {
    std::fprintf(stderr, "consumer: data came back different\n");
    return 1;
  }
  std::printf("consumer: 1 MiB round trip through the installed engine ok\n");
#ifdef SPYRE_DMA_CONSUMER_SIM
  return round_trip_on_sim();
#else
  return 0;
#endif
}
