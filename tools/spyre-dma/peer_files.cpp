#include "peer_files.hpp"

#include "spyre_dma/input_file.hpp"

#include <filesystem>
#include <stdexcept>
#include <thread>

namespace spyre_dma_cli {

std::string read_small_file(const std::string& path) { return spyre_dma::read_input_file(path); }

spyre_dma::rdma::RemoteHandle read_handle_file(const std::string& path) {
  const std::string text = read_small_file(path);
  try {
    return spyre_dma::rdma::RemoteHandle::from_text(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not a remote-memory handle: " + e.what());
  }
}

bool wait_for_file(const std::string& path, std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace spyre_dma_cli
