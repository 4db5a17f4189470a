// spyre-dma cards: the cards this machine has, as the vfio backend would choose among them.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace spyre_dma_cli {

struct CardsOptions {
  std::string sysfs = "/sys";
};

CLI::App* add_cards_command(CLI::App& app, CardsOptions& options);
// Prints one line per card (address, IDs, driver, IOMMU group, whether the vfio backend can open
// it). Returns 0, or 1 when there is none.
int run_cards(const CardsOptions& options);

}  // namespace spyre_dma_cli
