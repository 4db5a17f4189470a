#include "spyre_dma/model/link_rates.hpp"

#include "pcie/link_math.hpp"

namespace spyre_dma::model {

double raw_gbps(const LinkConfig& link) { return pcie::raw_bytes_per_ns(pcie::link_params(link)); }
double tlp_gbps(const LinkConfig& link) { return pcie::tlp_bytes_per_ns(pcie::link_params(link)); }

}  // namespace spyre_dma::model
