// Uses the installed SpyreDma package the way the README's example does: opens an engine on the
// reference device, moves a buffer to the device and back, and checks the bytes. It also encodes
// a control block through the contract API, which the model and trace tools use directly. Where
// the package has the simulator, it opens `sim` in process by name and does the same there.
#include <spyre_dma/hw/contract.hpp>
#include <spyre_dma/refdev/ref_device.hpp>
#include <spyre_dma/spyre_dma.hpp>

#ifdef SPYRE_DMA_CONSUMER_SIM
#include <spyre_dma/backend/builtin.hpp>
#endif

#include <cstdio>
#include <vector>

// `bytes` to the device and back on a fresh stream of `engine`; whether the bytes came back.
static bool round_trip(spyre_dma::Engine& engine, std::size_t bytes, const char* on) {
  using namespace spyre_dma;
  Stream stream = engine.create_stream();
  DeviceBuffer weights = engine.allocate(bytes);
  std::vector<std::uint8_t> host(bytes), back(bytes);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint8_t>(i * 31);
  stream.copy_h2d(weights, 0, host.data(), host.size());
  stream.copy_d2h(back.data(), weights, 0, back.size());
  if (Status s = stream.synchronize(std::chrono::seconds(60)); !s.ok()) {
    std::fprintf(stderr, "consumer: %s: %s\n", on, s.to_string().c_str());
    return false;
  }
  if (back != host) {
    std::fprintf(stderr, "consumer: %s: data came back different\n", on);
    return false;
  }
  std::printf("consumer: %zu bytes round trip on %s ok\n", bytes, on);
  return true;
}

int main() {
  using namespace spyre_dma;
  if (hw::encode(hw::ControlBlock{}).size() != hw::kCbBytes) {
    std::fprintf(stderr, "consumer: encoded CB is not 128 bytes\n");
    return 1;
  }
  auto engine = Engine::open(std::make_shared<refdev::RefDevice>());
  if (!round_trip(*engine, 1 << 20, "the installed engine and refdev")) return 1;
#ifdef SPYRE_DMA_CONSUMER_SIM
  // The simulator, in this process, through the registry of the installed build's backends.
  backend::Instance sim = backend::builtin().open("sim", {});
  auto on_sim = Engine::open(sim.device);
  if (!round_trip(*on_sim, 64 << 10, "the installed simulator")) return 1;
  const double ns = sim.clock ? sim.clock->now_ns() : 0.0;
  if (ns <= 0) {
    std::fprintf(stderr, "consumer: the simulated clock did not move\n");
    return 1;
  }
  std::printf("consumer: %.0f ns simulated\n", ns);
#endif
  return 0;
}
