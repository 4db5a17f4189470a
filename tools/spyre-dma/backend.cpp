#include "backend.hpp"

#include <algorithm>
#include <stdexcept>

#include "spyre_dma/refdev/ref_device.hpp"

namespace spyre_dma_cli {

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names{"refdev"};
  return names;
}

std::string check_backend(const std::string& name) {
  const auto& names = backend_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return {};
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return "unknown backend '" + name + "' (this build has: " + list + ")";
}

std::shared_ptr<spyre_dma::Device> open_backend(const std::string& name) {
  if (name == "refdev") return std::make_shared<spyre_dma::refdev::RefDevice>();
  throw std::invalid_argument(check_backend(name));
}

}  // namespace spyre_dma_cli
