// spyre-dma cards (see cards_command.hpp).
#include "cards_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "spyre_dma/vfio/kernel.hpp"

namespace spyre_dma_cli {

CLI::App* add_cards_command(CLI::App& app, CardsOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "cards", "List the cards on this machine (PCI vendor 1014) and whether the vfio backend can open each");
  cmd->add_option("--sysfs", o.sysfs, "Where sysfs is mounted")->capture_default_str();
  return cmd;
}

int run_cards(const CardsOptions& o) {
  const auto cards = spyre_dma::vfio::list_pci_devices(spyre_dma::hw::kPciVendorIbm, 0, o.sysfs);
  if (cards.empty()) {
    fmt::print("no card (PCI vendor 1014) under {}\n", o.sysfs);
    return 1;
  }
  fmt::print("{:<14} {:<10} {:<12} {:<6} {}\n", "address", "ids", "driver", "group", "vfio backend");
  for (const auto& c : cards) {
    const std::string usable = c.iommu_group < 0         ? "no: no IOMMU group (the IOMMU is off)"
                               : c.driver != "vfio-pci" ? "no: bind it to vfio-pci"
                                                        : "yes: --backend vfio --vfio-device " + c.address;
    fmt::print("{:<14} {:04x}:{:04x}  {:<12} {:<6} {}\n", c.address, c.vendor, c.device,
               c.driver.empty() ? "(none)" : c.driver, c.iommu_group < 0 ? "-" : std::to_string(c.iommu_group),
               usable);
  }
  return 0;
}

}  // namespace spyre_dma_cli
