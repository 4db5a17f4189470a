// Host memory a Python object holds: what a copy, a registration or a fill reads or writes.
#pragma once

#include <cstddef>

#include "native.hpp"

namespace spyre_dma::python {

struct HostRange {
  void* data = nullptr;
  std::size_t bytes = 0;
  // What keeps the memory alive and in place while the engine uses it: the exporter's buffer
  // (which also stops a bytearray from resizing), or the tensor with its storage (so that a
  // set_() or the tensor's collection cannot free the memory under the copy).
  py::object keep;
  // Whether the memory may be written: false for read-only exporters (bytes, a read-only numpy
  // array), even when only reading was asked for.
  bool writable = true;
};

// The memory of `obj` without a copy: any object with the buffer protocol (bytes, bytearray,
// memoryview, numpy arrays, mmap) or a CPU torch tensor. InvalidArgument naming `role` ("src",
// "dst") for anything else, for memory that is not one contiguous block, for a tensor that is not
// on the CPU, and, when `writable`, for read-only memory. A torch tensor's storage can still be
// grown by resize_() (which reallocates it): torch gives no way to pin a resizable storage from
// outside, so a tensor must not be resized while a copy uses it.
HostRange host_range(py::handle obj, bool writable, const char* role);

}  // namespace spyre_dma::python
