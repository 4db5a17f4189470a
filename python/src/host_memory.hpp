// Host memory a Python object holds: what a copy, a registration or a fill reads or writes.
#pragma once

#include <cstddef>

#include "native.hpp"

namespace spyre_dma::python {

struct HostRange {
  void* data = nullptr;
  std::size_t bytes = 0;
  // What keeps the memory alive and in place while the engine uses it: a memoryview (which also
  // stops a bytearray from resizing), or the tensor itself.
  py::object keep;
};

// The memory of `obj` without a copy: any object with the buffer protocol (bytes, bytearray,
// memoryview, numpy arrays, mmap) or a CPU torch tensor. InvalidArgument naming `role` ("src",
// "dst") for anything else, for memory that is not one contiguous block, for a tensor that is not
// on the CPU, and, when `writable`, for read-only memory.
HostRange host_range(py::handle obj, bool writable, const char* role);

}  // namespace spyre_dma::python
