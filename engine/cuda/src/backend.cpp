// The `cuda` backend (see spyre_dma/cuda/backend.hpp).
#include "spyre_dma/cuda/backend.hpp"

#include "spyre_dma/cuda/cuda_copy_executor.hpp"
#include "spyre_dma/cuda/host_copy_executor.hpp"

namespace spyre_dma::cuda {
namespace {

using backend::BackendError;

std::uint64_t number(const backend::Settings& s, const std::string& key, std::uint64_t fallback) {
  if (!s.has(key)) return fallback;
  const std::string v = s.get(key);
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || v.front() == '-') {
    throw BackendError("backend 'cuda': --" + key + " '" + v + "': expected a non-negative integer");
  }
  return n;
}

class CudaBackend final : public backend::Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string summary() const override {
    return "the contract on a GPU's copy engines (--executor cuda) or on host memcpy (--executor host)";
  }
  std::vector<backend::SettingInfo> settings() const override {
    return {{"executor", "cuda backend: cuda (a GPU's copy engines) or host (memcpy threads)"},
            {"cuda-memory", "cuda backend: device memory in bytes (default: 4 GiB on cuda, 256 MiB on host)"},
            {"cuda-device", "cuda backend: CUDA device ordinal"}};
  }

  nlohmann::json configuration(const backend::Settings& s) const override {
    const std::string executor = s.get("executor", "cuda");
    if (executor != "cuda" && executor != "host") {
      throw BackendError("backend 'cuda': --executor '" + executor + "': expected cuda or host");
    }
    if (!s.patch.is_null()) {
      throw BackendError("backend 'cuda' has no configuration to patch (" + s.patch.dump() +
                         "): fault injection needs --backend sim or rtl");
    }
    const std::uint64_t device = number(s, "cuda-device", 0);
    if (executor == "cuda") {
      if (std::string why = cuda_device_unavailable_reason(static_cast<int>(device)); !why.empty()) {
        throw BackendError("backend 'cuda' (executor cuda) is not available here: " + why +
                           " (--executor host runs the same device on memcpy threads)");
      }
    } else if (s.has("cuda-device")) {
      throw BackendError("backend 'cuda': --cuda-device applies to --executor cuda only");
    }
    const CopyEngineDeviceConfig d;
    return {{"backend", "cuda"},
            {"executor", executor},
            {"cuda_device", device},
            {"device_memory_bytes", number(s, "cuda-memory", default_memory(executor))},
            {"depth", d.depth},
            {"max_cb_bytes", d.max_cb_bytes},
            {"window", d.window}};
  }

  backend::Instance open(const backend::Settings& s) const override {
    const nlohmann::json c = configuration(s);
    std::unique_ptr<CopyExecutor> executor;
    if (c["executor"] == "cuda") {
      CudaExecutorConfig cc;
      cc.device = c["cuda_device"].get<int>();
      cc.device_memory_bytes = c["device_memory_bytes"].get<std::uint64_t>();
      executor = make_cuda_executor(cc);
    } else {
      HostCopyExecutorConfig hc;
      hc.device_memory_bytes = c["device_memory_bytes"].get<std::uint64_t>();
      executor = std::make_unique<HostCopyExecutor>(hc);
    }
    auto device = std::make_shared<CopyEngineDevice>(std::move(executor));
    backend::Instance i;
    i.memory = device.get();
    i.misbehave = device.get();
    i.device = std::move(device);
    return i;
  }

 private:
  static std::uint64_t default_memory(const std::string& executor) {
    return executor == "cuda" ? CudaExecutorConfig{}.device_memory_bytes : HostCopyExecutorConfig{}.device_memory_bytes;
  }
};

}  // namespace

void register_backend(backend::Registry& registry) { registry.add(std::make_unique<CudaBackend>()); }

}  // namespace spyre_dma::cuda
