// spyre-dma serve (see serve_command.hpp).
#include "serve_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/vfio/server.hpp"

namespace spyre_dma_cli {
namespace {

spyre_dma::vfio::Server* g_server = nullptr;  // for the signal handler: stop() is async-signal-safe

extern "C" void on_signal(int) {
  if (g_server) g_server->stop();
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "Expose a backend's device over vfio-user on a UNIX socket, for an engine in another process "
               "(--backend vfio-user --vfio-socket PATH); each client gets a fresh device");
  add_backend_options(*cmd, o.backend);
  cmd->add_option("--socket", o.socket, "UNIX socket path to listen on (an old socket there is replaced)")->required();
  cmd->add_flag("--once", o.once, "Serve one client, then exit");
  cmd->add_option("--patch", o.patch, "JSON merge patch for the device's configuration (sim, rtl)");
  cmd->add_option("--seed", o.seed, "Seed of the device's random numbers (fault injection)");
  return cmd;
}

int run_serve(const ServeOptions& o) {
  spyre_dma::backend::Settings settings = settings_of(o.backend);
  if (!o.patch.empty()) {
    settings.patch = nlohmann::json::parse(o.patch, nullptr, false);
    if (settings.patch.is_discarded() || !settings.patch.is_object()) {
      fmt::print(stderr, "spyre-dma serve: error: --patch is not a JSON object: {}\n", o.patch);
      return 2;
    }
  }
  settings.seed = o.seed;
  if (const std::string why = spyre_dma::backend::builtin().check(o.backend.name, settings); !why.empty()) {
    fmt::print(stderr, "spyre-dma serve: error: {}\n", why);
    return 2;
  }
  const std::string backend = o.backend.name;
  std::unique_ptr<spyre_dma::vfio::Server> made;
  try {
    made = std::make_unique<spyre_dma::vfio::Server>(
        [backend, settings] { return spyre_dma::backend::builtin().open(backend, settings); }, o.socket,
        [](const std::string& line) { fmt::print(stderr, "{}\n", line); });
  } catch (const std::runtime_error& e) {  // the socket path: a usage error
    fmt::print(stderr, "spyre-dma serve: error: {}\n", e.what());
    return 2;
  }
  spyre_dma::vfio::Server& server = *made;
  g_server = &server;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (!o.once) fmt::print(stderr, "spyre-dma serve: {} on {}\n", backend, o.socket);
  server.serve(o.once);
  g_server = nullptr;
  return 0;
}

}  // namespace spyre_dma_cli
