// spyre-dma serve: any registered backend exposed as a vfio-user device on a UNIX socket
// (spyre_dma/vfio/server.hpp), for an engine in another process (the vfio-user backend).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend.hpp"

namespace CLI {
class App;
}

namespace spyre_dma_cli {

struct ServeOptions {
  BackendOptions backend;
  std::string socket;
  bool once = false;
  std::string patch;  // a JSON merge patch for the device's configuration (a test's faults)
  std::optional<std::uint64_t> seed;
  unsigned clients = 1;
  std::uint64_t client_memory = 4ull << 30;
  std::uint32_t client_mappings = 4096;
  double reply_timeout_s = 5;
};

CLI::App* add_serve_command(CLI::App& app, ServeOptions& options);
// Serves until SIGINT or SIGTERM (or, with --once, until the first client has left); SIGPIPE is
// ignored, so no client can end the process with a signal. Returns the exit status.
int run_serve(const ServeOptions& options);

}  // namespace spyre_dma_cli
