// The engine's side of vfio-user: a Device whose BAR0, DMA mappings and interrupts are messages to
// a device server in another process (`spyre-dma serve`), the same operations the kernel's VFIO
// offers for a real card.
//
//   * BAR0 reads are VFIO_USER_REGION_READ; writes are posted (no reply is awaited, as a PCIe
//     memory write is posted), and a later read on the same connection sees them.
//   * Doorbells: where the server offers its doorbell region (spyre-dma serve does), the client
//     maps it and every BAR0 write becomes a store into a log both processes share; the server
//     polls the log while the client is busy and sleeps on an eventfd, which the client kicks,
//     when it is not. The log keeps the client's order of writes, and the server applies it
//     before every message, so the device sees writes exactly as through messages
//     (ClientOptions::map_doorbells = false keeps every write a message).
//   * map() picks the IOVA itself, as a VFIO user does (the rules of the device's IOMMU: page
//     offset kept, a guard page between mappings), and sends VFIO_USER_DMA_MAP with the file
//     descriptor behind the memory. Only shareable memory can be mapped (spyre_dma/
//     shareable_memory.hpp: what the engine allocates for its rings, staging buffers and
//     allocate_host); other memory is refused with std::invalid_argument naming the address.
//   * Interrupts arrive on one eventfd per pipeline (MSI-X through VFIO_USER_DEVICE_SET_IRQS), or
//     none are set up and a waiter polls the RB rings (InterruptMode::kPolling).
//     A host-driven device (sim, rtl) advances inside wait_for_interrupt through the server's
//     clock region (spyre_dma/vfio/protocol.hpp).
//   * A test bench's capabilities travel too: the memory backdoor as reads and writes of the
//     server's memory region, the simulated clock as a read of its clock region, misbehaviour as
//     a write to its misbehaviour region.
//   * A server that goes away makes every later call throw std::runtime_error naming it; the
//     engine's device guard turns that into one typed error per op.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spyre_dma/backend/capabilities.hpp"
#include "spyre_dma/device.hpp"
#include "spyre_dma/vfio/options.hpp"

namespace spyre_dma::vfio {

struct ClientOptions {
  std::string socket_path;
  // How long connecting (the server may still be starting) and each reply may take.
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(10);
  std::chrono::nanoseconds reply_timeout = std::chrono::seconds(30);
  InterruptMode interrupts = InterruptMode::kEventfds;
  // Map the server's doorbell region where it offers one: BAR0 writes are then stores to a page
  // both processes share, not messages (see "Doorbells" above).
  bool map_doorbells = true;
};

// Connects and sets the device up (version, regions, interrupts). Throws std::runtime_error naming
// the socket and what failed.
std::shared_ptr<Device> connect(const ClientOptions& options);

// A private server for one device: `program serve --backend B --socket S --once [args]` started as
// a child process, and a client connected to it. The child ends when the device is destroyed.
struct SpawnOptions {
  std::string program;  // the spyre-dma executable
  std::string backend;  // what the server serves: sim, rtl, refdev, ...
  std::vector<std::string> extra_args;  // more of serve's arguments (--preset, --patch, ...)
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(20);
  InterruptMode interrupts = InterruptMode::kEventfds;
  // Map the server's doorbell region where it offers one: BAR0 writes are then stores to a page
  // both processes share, not messages (see "Doorbells" above).
  bool map_doorbells = true;
};
std::shared_ptr<Device> spawn(const SpawnOptions& options);
// The process id of the server spawn() started for `device` (-1 for other devices).
pid_t server_pid(const Device& device);
// The served device's memory backdoor, simulated clock and misbehaviour control, where its server offers them (the
// memory and clock regions of spyre_dma/vfio/protocol.hpp); null otherwise, or for a device that
// connect() or spawn() did not return.
backend::MemoryBackdoor* memory_backdoor(Device& device);
backend::SimulatedClock* simulated_clock(Device& device);
backend::MisbehaveControl* misbehave_control(Device& device);

}  // namespace spyre_dma::vfio
