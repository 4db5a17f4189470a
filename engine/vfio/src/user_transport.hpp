// The vfio-user transport on its own (user_transport.cpp), for what drives VFIO's operations
// without the Device on top: the tests that run the kernel transport's calls against a server.
#pragma once

#include <memory>

#include "spyre_dma/vfio/client.hpp"
#include "vfio_device.hpp"

namespace spyre_dma::vfio {

// Connects and speaks VFIO_USER_VERSION; `served` receives what the server serves.
std::unique_ptr<Transport> connect_transport(const ClientOptions& options, DeviceDescription* served = nullptr);

}  // namespace spyre_dma::vfio
