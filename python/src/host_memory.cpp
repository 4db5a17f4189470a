#include "host_memory.hpp"

#include <fmt/format.h>

#include <string>

namespace spyre_dma::python {
namespace {

std::string type_name(py::handle obj) { return py::str(obj.get_type().attr("__name__")); }

// torch.Tensor has no buffer protocol; its storage is reached through data_ptr(). Recognised by
// its type's module, so that torch is never imported here.
bool is_torch_tensor(py::handle obj) {
  const py::handle type = obj.get_type();
  if (!py::hasattr(type, "__module__")) return false;
  const std::string module = py::str(type.attr("__module__"));
  return module.compare(0, 5, "torch") == 0 && py::hasattr(obj, "data_ptr") && py::hasattr(obj, "is_contiguous");
}

HostRange tensor_range(py::handle t, const char* role) {
  const std::string device = py::str(t.attr("device"));
  if (device != "cpu")
    throw InvalidArgument(fmt::format("{}: a tensor on device '{}': copies take CPU tensors (tensor.cpu())", role, device));
  if (!t.attr("is_contiguous")().cast<bool>())
    throw InvalidArgument(fmt::format(
        "{}: a non-contiguous tensor (shape {}, stride {}) is not one block of memory: pass tensor.contiguous()", role,
        std::string(py::str(t.attr("shape"))), std::string(py::str(t.attr("stride")()))));
  const auto elements = t.attr("numel")().cast<std::size_t>();
  const auto element = t.attr("element_size")().cast<std::size_t>();
  const auto address = t.attr("data_ptr")().cast<std::uintptr_t>();
  return HostRange{reinterpret_cast<void*>(address), elements * element, py::reinterpret_borrow<py::object>(t)};
}

}  // namespace

HostRange host_range(py::handle obj, bool writable, const char* role) {
  if (PyObject_CheckBuffer(obj.ptr())) {
    auto view = py::reinterpret_steal<py::object>(PyMemoryView_FromObject(obj.ptr()));
    if (!view) throw py::error_already_set();
    const Py_buffer* b = PyMemoryView_GET_BUFFER(view.ptr());
    if (writable && b->readonly)
      throw InvalidArgument(fmt::format("{}: a read-only {} cannot be copied into: pass writable memory "
                                        "(bytearray, a numpy array, a tensor)",
                                        role, type_name(obj)));
    if (!PyBuffer_IsContiguous(b, 'A'))
      throw InvalidArgument(fmt::format("{}: a non-contiguous {} is not one block of memory: pass a contiguous one "
                                        "(numpy.ascontiguousarray)",
                                        role, type_name(obj)));
    return HostRange{b->buf, static_cast<std::size_t>(b->len), std::move(view)};
  }
  if (is_torch_tensor(obj)) return tensor_range(obj, role);
  throw InvalidArgument(fmt::format("{}: a {} is not host memory: pass an object with the buffer protocol (bytes, "
                                    "bytearray, memoryview, a numpy array) or a CPU torch tensor",
                                    role, type_name(obj)));
}

}  // namespace spyre_dma::python
