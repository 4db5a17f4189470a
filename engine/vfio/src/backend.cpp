// The `vfio-user` backend's registration (see spyre_dma/vfio/backend.hpp).
#include "spyre_dma/vfio/backend.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "spyre_dma/vfio/client.hpp"
#include "spyre_dma/vfio/kernel.hpp"

namespace spyre_dma::vfio {
namespace {

constexpr const char* kForwarded[] = {"preset", "config", "fidelity"};

// The vfio-interrupts setting of either backend.
InterruptMode interrupts_of(const backend::Settings& s, const char* backend) {
  const std::string v = s.get("vfio-interrupts", "eventfd");
  if (v == "eventfd") return InterruptMode::kEventfds;
  if (v == "poll") return InterruptMode::kPolling;
  throw backend::BackendError(std::string("backend ") + backend + ": vfio-interrupts '" + v +
                              "' is neither eventfd (MSI-X on eventfds) nor poll");
}
constexpr const char* kInterruptsHelp = "eventfd (MSI-X on eventfds, the default) or poll (no interrupts)";

// The vfio-doorbells setting: whether BAR0 writes go through the server's doorbell region.
bool map_doorbells_of(const backend::Settings& s) {
  const std::string v = s.get("vfio-doorbells", "mapped");
  if (v == "mapped") return true;
  if (v == "messages") return false;
  throw backend::BackendError("backend vfio-user: vfio-doorbells '" + v +
                              "' is neither mapped (a page both processes share) nor messages");
}

// The spyre-dma executable that starts private servers.
std::string server_program(const backend::Settings& s) {
  if (s.has("vfio-server")) return s.get("vfio-server");
  if (const char* env = std::getenv("SPYRE_DMA_SERVE_PROGRAM"); env && *env) return env;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    const std::string path(self, static_cast<std::size_t>(n));
    const auto slash = path.rfind('/');
    if (path.substr(slash == std::string::npos ? 0 : slash + 1) == "spyre-dma") return path;
  }
  return "spyre-dma";
}

class VfioUserBackend final : public backend::Backend {
 public:
  std::string name() const override { return "vfio-user"; }
  std::string summary() const override {
    return "a device in another process over vfio-user (spyre-dma serve; --vfio-socket or --vfio-serve)";
  }
  std::vector<backend::SettingInfo> settings() const override {
    return {{"vfio-socket", "the socket of a running `spyre-dma serve`"},
            {"vfio-serve", "start a private server of this backend for each device"},
            {"vfio-server", "the spyre-dma executable that starts private servers"},
            {"vfio-interrupts", kInterruptsHelp},
            {"vfio-doorbells",
             "mapped (BAR0 writes as stores to a page shared with the server, the default) or messages (one "
             "message each)"},
            {"preset", "passed on to a private server"},
            {"config", "passed on to a private server"},
            {"fidelity", "passed on to a private server"}};
  }
  nlohmann::json configuration(const backend::Settings& s) const override {
    check(s);
    nlohmann::json j = {{"backend", "vfio-user"},
                        {"interrupts", s.get("vfio-interrupts", "eventfd")},
                        {"doorbells", s.get("vfio-doorbells", "mapped")}};
    if (s.has("vfio-socket")) j["socket"] = s.get("vfio-socket");
    if (s.has("vfio-serve")) {
      j["serve"] = s.get("vfio-serve");
      j["server"] = server_program(s);
      for (const char* k : kForwarded) {
        if (s.has(k)) j[k] = s.get(k);
      }
    }
    return j;
  }
  backend::Instance open(const backend::Settings& s) const override {
    check(s);
    backend::Instance i;
    if (s.has("vfio-socket")) {
      ClientOptions o;
      o.socket_path = s.get("vfio-socket");
      o.interrupts = interrupts_of(s, "vfio-user");
      o.map_doorbells = map_doorbells_of(s);
      i.device = connect(o);
      return with_capabilities(i);
    }
    SpawnOptions o;
    o.program = server_program(s);
    o.interrupts = interrupts_of(s, "vfio-user");
    o.map_doorbells = map_doorbells_of(s);
    o.backend = s.get("vfio-serve");
    for (const char* k : kForwarded) {
      if (s.has(k)) o.extra_args.insert(o.extra_args.end(), {std::string("--") + k, s.get(k)});
    }
    if (!s.patch.is_null()) o.extra_args.insert(o.extra_args.end(), {"--patch", s.patch.dump()});
    if (s.seed) o.extra_args.insert(o.extra_args.end(), {"--seed", std::to_string(*s.seed)});
    i.device = spawn(o);
    return with_capabilities(i);
  }

 private:
  static backend::Instance with_capabilities(backend::Instance i) {
    i.memory = memory_backdoor(*i.device);
    i.clock = simulated_clock(*i.device);
    i.misbehave = misbehave_control(*i.device);
    return i;
  }
  static void check(const backend::Settings& s) {
    (void)interrupts_of(s, "vfio-user");
    (void)map_doorbells_of(s);
    if (s.has("vfio-socket") == s.has("vfio-serve")) {
      throw backend::BackendError(
          "backend vfio-user: give exactly one of vfio-socket (a running server's socket) and vfio-serve (a backend "
          "to serve privately)");
    }
    if (s.has("vfio-socket")) {
      for (const char* k : kForwarded) {
        if (s.has(k)) {
          throw backend::BackendError(std::string("backend vfio-user: setting ") + k +
                                      " goes to a private server (vfio-serve); a running server was started with its own");
        }
      }
      if (!s.patch.is_null()) {
        throw backend::BackendError("backend vfio-user: a configuration patch (faults) needs a private server (vfio-serve)");
      }
    }
  }
};

// The card itself, through the kernel's VFIO.
class VfioBackend final : public backend::Backend {
 public:
  std::string name() const override { return "vfio"; }
  std::string summary() const override { return "the card through the kernel's VFIO (vfio-pci; --vfio-device)"; }
  std::vector<backend::SettingInfo> settings() const override {
    return {{"vfio-device", "the card: a PCI address (0000:3b:00.0) or vendor:device IDs (1014:06a7); default the first"},
            {"vfio-interrupts", kInterruptsHelp}};
  }
  std::string unavailable() const override {
    if (::access("/dev/vfio/vfio", F_OK) != 0) return "no /dev/vfio/vfio on this machine (load vfio-pci)";
    if (list_pci_devices().empty()) return "no card on this machine (no PCI device of vendor 1014)";
    return {};
  }
  nlohmann::json configuration(const backend::Settings& s) const override {
    (void)interrupts_of(s, "vfio");
    return {{"backend", "vfio"},
            {"device", s.get("vfio-device", "(the first card)")},
            {"interrupts", s.get("vfio-interrupts", "eventfd")}};
  }
  backend::Instance open(const backend::Settings& s) const override {
    std::string selector = s.get("vfio-device");
    if (selector.empty()) {
      const auto cards = list_pci_devices();
      if (cards.empty()) throw backend::BackendError("backend vfio: no card on this machine");
      selector = cards.front().address;
    }
    backend::Instance i;
    try {
      i.device = open_card(selector, "/sys", interrupts_of(s, "vfio"));
    } catch (const std::runtime_error& e) {
      throw backend::BackendError(std::string("backend vfio: ") + e.what());
    }
    return i;
  }
};

}  // namespace

void register_backend(backend::Registry& registry) {
  registry.add(std::make_unique<VfioUserBackend>());
  registry.add(std::make_unique<VfioBackend>());
}

}  // namespace spyre_dma::vfio
