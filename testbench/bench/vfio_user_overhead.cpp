// What vfio-user costs: the engine on a refdev in its own process against the same engine on a
// refdev in a `spyre-dma serve` process reached over vfio-user, measured in the same run.
//
//   BM_RoundTrip/vfio_user:0   a registered 4 KiB H2D, then Stream::synchronize, on refdev here
//   BM_RoundTrip/vfio_user:1   the same through vfio-user (BAR0 writes through the server's
//                              doorbell region, interrupts on eventfds, host memory shared by memfd)
//   BM_RoundTrip/vfio_user:2   the same with every BAR0 write a posted message (a client that
//                              does not map the doorbell region)
//   BM_SocketPingPong          the floor of any transport over a socket: 32 bytes sent to a
//                              thread that answers with 32 bytes, over a UNIX socket pair (a
//                              vfio-user round trip needs at least one such exchange: the doorbell
//                              one way, the interrupt or the RB the other)
//   BM_Copy256MiB/vfio_user:0  a registered 256 MiB H2D and D2H, synchronized, here
//   BM_Copy256MiB/vfio_user:1  the same through vfio-user
//
// Counters:
//   us_per_op / gb_per_s      per row (the mean)
//   p50_us, p90_us, p99_us, p999_us   the distribution of single ops (nearest rank)
//   vs_in_process             a vfio_user row's time per op over the in-process row's
//                             (targets: round trip <= 3, 256 MiB bandwidth >= 0.95 as 1/ratio)
//   p50_vs_in_process         the same for the medians
//   vs_socket_floor           the vfio_user round trip over BM_SocketPingPong's
// The in_process figure is measured on the spot when its row was filtered out.
//
// Run: build/default/testbench/bench/vfio_user_overhead (needs the build's spyre-dma).
#include <benchmark/benchmark.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "bench_util.hpp"
#include "spyre_dma/refdev/ref_device.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "spyre_dma/vfio/client.hpp"

namespace {

using namespace spyre_dma;
using spyre_bench::WallTimer;

constexpr auto kWait = std::chrono::seconds(30);

// 0: refdev in this process; 1: through vfio-user; 2: through vfio-user, messages only.
std::shared_ptr<Device> open_device(std::int64_t how) {
  if (how == 0) return std::make_shared<refdev::RefDevice>();
  vfio::SpawnOptions o;
  o.program = SPYRE_DMA_BENCH_SERVER_PROGRAM;
  o.backend = "refdev";
  o.map_doorbells = how == 1;
  return vfio::spawn(o);
}

// Seconds per op of `n` ops of `bytes` (H2D, plus D2H when `both`), each synchronized.
// `samples`, when given, gets every op's time.
double seconds_per_op(Engine& engine, std::size_t bytes, bool both, int n, std::string& error,
                      spyre_bench::LatencySamples* samples = nullptr) {
  HostBuffer host = engine.allocate_host(bytes);
  DeviceBuffer dev = engine.allocate(bytes);
  Stream stream = engine.create_stream();
  auto once = [&] {
    stream.copy_h2d(dev, 0, host.data(), bytes);
    if (both) stream.copy_d2h(host.data(), dev, 0, bytes);
    const Status st = stream.synchronize(kWait);
    if (!st.ok()) error = st.to_string();
  };
  once();  // pages and mappings warm
  WallTimer t;
  for (int i = 0; i < n && error.empty(); ++i) {
    if (samples) samples->time(once);
    else once();
  }
  return t.seconds() / n;
}

std::string key(const char* what) { return std::string("vfio_user_overhead_") + what; }

void run(benchmark::State& state, std::size_t bytes, bool both, int n, const char* what) {
  const bool through_vfio = state.range(0) != 0;
  auto engine = Engine::open(open_device(state.range(0)));
  std::string error;
  double seconds = 0;
  std::int64_t iterations = 0;
  spyre_bench::LatencySamples samples;
  for (auto _ : state) {
    const double s = seconds_per_op(*engine, bytes, both, n, error, &samples);
    if (!error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    state.SetIterationTime(s * n);
    seconds += s;
    ++iterations;
  }
  const double per_op = seconds / static_cast<double>(iterations);
  if (!through_vfio) {
    spyre_bench::record_rate(key(what), per_op);
    spyre_bench::record_rate(key(what) + "_p50", samples.summary().p50);
  }
  state.counters["us_per_op"] = per_op * 1e6;
  samples.report(state);
  state.counters["gb_per_s"] = static_cast<double>(bytes * (both ? 2 : 1)) / per_op / 1e9;
  if (through_vfio) {
    double base = 0;
    double base_p50 = 0;
    if (auto r = spyre_bench::find_rate(key(what))) {
      base = *r;
      base_p50 = spyre_bench::find_rate(key(what) + "_p50").value_or(0);
    } else {
      auto local = Engine::open(open_device(0));
      spyre_bench::LatencySamples local_samples;
      base = seconds_per_op(*local, bytes, both, n, error, &local_samples);
      base_p50 = local_samples.summary().p50;
    }
    state.counters["vs_in_process"] = per_op / base;
    if (base_p50 > 0) state.counters["p50_vs_in_process"] = samples.summary().p50 / base_p50;
  }
}

// One 32-byte request and its 32-byte answer over a UNIX socket pair, per op.
double socket_ping_pong_seconds(int n) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  std::thread echo([fd = fds[1], n] {
    char buf[32];
    for (int i = 0; i < n; ++i) {
      if (::recv(fd, buf, sizeof buf, MSG_WAITALL) != sizeof buf || ::send(fd, buf, sizeof buf, 0) != sizeof buf) return;
    }
  });
  char buf[32] = {};
  WallTimer t;
  for (int i = 0; i < n; ++i) {
    if (::send(fds[0], buf, sizeof buf, 0) != sizeof buf || ::recv(fds[0], buf, sizeof buf, MSG_WAITALL) != sizeof buf) break;
  }
  const double s = t.seconds() / n;
  echo.join();
  ::close(fds[0]);
  ::close(fds[1]);
  return s;
}

void BM_SocketPingPong(benchmark::State& state) {
  double seconds = 0;
  std::int64_t iterations = 0;
  for (auto _ : state) {
    const double s = socket_ping_pong_seconds(2000);
    state.SetIterationTime(s * 2000);
    seconds += s;
    ++iterations;
  }
  const double per_op = seconds / static_cast<double>(iterations);
  spyre_bench::record_rate(key("socket"), per_op);
  state.counters["us_per_op"] = per_op * 1e6;
}

void BM_RoundTrip(benchmark::State& state) {
  run(state, 4096, false, 2000, "roundtrip");
  if (state.range(0) != 0 && state.counters.count("us_per_op")) {
    const auto floor = spyre_bench::find_rate(key("socket"));
    const double floor_s = floor ? *floor : socket_ping_pong_seconds(2000);
    state.counters["vs_socket_floor"] = state.counters["us_per_op"] / (floor_s * 1e6);
  }
}
void BM_Copy256MiB(benchmark::State& state) { run(state, 256u << 20, true, 2, "copy256"); }

BENCHMARK(BM_SocketPingPong)->UseManualTime()->MinTime(spyre_bench::min_time(0.5))->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RoundTrip)->ArgName("vfio_user")->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->MinTime(spyre_bench::min_time(0.5))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Copy256MiB)->ArgName("vfio_user")->Arg(0)->Arg(1)->UseManualTime()->MinTime(spyre_bench::min_time(1))
    ->Unit(benchmark::kMillisecond);

}  // namespace
