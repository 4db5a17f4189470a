// The `vfio-user` and `vfio` backends in the backend registry (spyre_dma/backend/registry.hpp): a
// device in another process reached over vfio-user (spyre_dma/vfio/client.hpp), and the card
// through the kernel's VFIO (spyre_dma/vfio/kernel.hpp).
#pragma once

#include "spyre_dma/backend/registry.hpp"

namespace spyre_dma::vfio {

// Registers `vfio-user`. Settings (exactly one of the first two):
//   vfio-socket   the socket of a running server (`spyre-dma serve --socket PATH`)
//   vfio-serve    a backend name: each device gets a private server of that backend, started as
//                 `<vfio-server> serve --backend NAME --once` and ended with the device
//   vfio-server   the spyre-dma executable for vfio-serve (default: $SPYRE_DMA_SERVE_PROGRAM, else
//                 the running program when it is spyre-dma, else spyre-dma on PATH)
//   vfio-interrupts  eventfd (MSI-X on eventfds, the default) or poll (no interrupts are set up)
//   preset, config, fidelity   passed on to a private server
// A configuration patch (a regression test's faults) and the seed go to a private server too.
//
// Registers `vfio` too. Settings: vfio-device, the card's PCI address or vendor:device IDs
// (default: the first card found), and vfio-interrupts. Unavailable where /dev/vfio/vfio or a card is missing.
void register_backend(backend::Registry& registry);

}  // namespace spyre_dma::vfio
