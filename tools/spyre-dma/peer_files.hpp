// Files through which processes find each other (rdma-bench, allreduce): one side writes a small
// file atomically (a handle, a "done"), the other waits for it to appear and reads it whole.
#pragma once

#include <chrono>
#include <string>

#include "spyre_dma/rdma/remote_handle.hpp"

namespace spyre_dma_cli {

// The whole file, under the rules of spyre_dma/input_file.hpp (an error names the path).
std::string read_small_file(const std::string& path);
// The remote-memory handle the file holds (RemoteHandle::to_text's line); an error names the file.
spyre_dma::rdma::RemoteHandle read_handle_file(const std::string& path);
// Whether `path` appeared within `timeout` (polled every 5 ms).
bool wait_for_file(const std::string& path, std::chrono::nanoseconds timeout);

}  // namespace spyre_dma_cli
