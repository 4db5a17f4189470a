// The data paths a configuration may name (see spyre_dma/model/data_path.hpp): "systemc" always,
// others as the libraries that provide them register; the DataPath defaults.
#include <map>
#include <mutex>
#include <stdexcept>

#include "device/systemc_data_path.hpp"
#include "spyre_dma/model/data_path.hpp"

namespace spyre_dma::model {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, DataPathFactory> factories{
      {"systemc", [](const DataPathContext& c) { return std::make_unique<SystemcDataPath>(c); }}};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

CbExecution DataPath::collect(hw::Pipeline pipeline) {
  throw std::logic_error("data path: collect() for pipeline " + std::string(hw::to_string(pipeline)) +
                         ", which has no pending CB");
}

void register_data_path(const std::string& name, DataPathFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> data_path_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

std::unique_ptr<DataPath> make_data_path(const std::string& name, const DataPathContext& context) {
  DataPathFactory factory;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.factories.find(name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const std::string& n : data_path_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("data_path \"" + name + "\": no such data path in this program (it has: " + known +
                                "; \"rtl\" comes with SpyreDma::rtl, built with -DSPYRE_DMA_RTL=ON)");
  }
  return factory(context);
}

}  // namespace spyre_dma::model
