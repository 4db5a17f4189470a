// spyre-dma serve (see serve_command.hpp).
#include "serve_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <signal.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli_checks.hpp"
#include "size_spec.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/input_file.hpp"
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
  cmd->add_option("--clients", o.clients,
                  "Clients served at once, each with its own device (sim and rtl: 1, one model per process)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 256u));
  cmd->add_option_function<std::string>(
         "--client-memory", [&o](const std::string& v) { o.client_memory = parse_size(v); },
         "Device memory one client may write through the memory region (default 4GiB)")
      ->check(size_value());
  cmd->add_option("--client-mappings", o.client_mappings, "DMA mappings one client may hold")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--reply-timeout", o.reply_timeout_s,
                  "Seconds a reply may wait for its client to read it before the client is disconnected")
      ->capture_default_str()
      ->check(timeout_seconds());
  cmd->footer("Example: spyre-dma serve --backend refdev --socket /tmp/spyre.sock --clients 4");
  return cmd;
}

int run_serve(const ServeOptions& o) {
  spyre_dma::backend::Settings settings = settings_of(o.backend);
  if (!o.patch.empty()) {
    if (spyre_dma::json_too_deep_at(o.patch) != std::string_view::npos) {
      fmt::print(stderr, "spyre-dma serve: error: --patch {}\n", spyre_dma::json_too_deep_message());
      return 2;
    }
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
  spyre_dma::vfio::ServerLimits limits;
  limits.clients = o.clients;
  limits.client_memory_bytes = o.client_memory;
  limits.client_mappings = o.client_mappings;
  limits.reply_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(to_timeout(o.reply_timeout_s));
  std::unique_ptr<spyre_dma::vfio::Server> made;
  try {
    made = std::make_unique<spyre_dma::vfio::Server>(
        [backend, settings] { return spyre_dma::backend::builtin().open(backend, settings); }, o.socket,
        [](const std::string& line) { fmt::print(stderr, "{}\n", line); }, limits);
  } catch (const std::runtime_error& e) {  // the socket path: a usage error
    fmt::print(stderr, "spyre-dma serve: error: {}\n", e.what());
    return 2;
  }
  spyre_dma::vfio::Server& server = *made;
  g_server = &server;
  // A peer must not end the server with a signal: writes to a socket whose reader is gone fail with
  // EPIPE instead of killing the process. SIGINT and SIGTERM stop serving (no SA_RESTART, so a
  // wait in progress wakes).
  std::signal(SIGPIPE, SIG_IGN);
  struct sigaction stop {};
  stop.sa_handler = on_signal;
  sigemptyset(&stop.sa_mask);
  ::sigaction(SIGINT, &stop, nullptr);
  ::sigaction(SIGTERM, &stop, nullptr);
  if (!o.once) fmt::print(stderr, "spyre-dma serve: {} on {}\n", backend, o.socket);
  server.serve(o.once);
  g_server = nullptr;
  return 0;
}

}  // namespace spyre_dma_cli
