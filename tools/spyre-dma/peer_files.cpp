#include "peer_files.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace spyre_dma_cli {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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
