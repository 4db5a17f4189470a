// Files through which processes find each other (rdma-bench, allreduce): one side writes a small
// file atomically (a handle, a "done"), the other waits for it to appear and reads it whole.
#pragma once

#include <chrono>
#include <string>

namespace spyre_dma_cli {

// The whole file ("" if it cannot be read).
std::string read_small_file(const std::string& path);
// Whether `path` appeared within `timeout` (polled every 5 ms).
bool wait_for_file(const std::string& path, std::chrono::nanoseconds timeout);

}  // namespace spyre_dma_cli
