#include "host_memory.hpp"

#include <fmt/format.h>

#include <string>

namespace spyre_dma::python {
namespace {

std::string type_name(py::handle obj) { return py::str(obj.get_type().attr("__name__")); }

// torch.Tensor has no buffer protocol; its storage is reached through data_ptr(). The class is
// taken from sys.modules once torch has been imported by the program (never imported here), then
// recognised by a type check.
bool is_torch_tensor(py::handle obj) {
  static PyObject* tensor_type = nullptr;  // a strong reference, kept for the process
  if (!tensor_type) {
    PyObject* torch = PyDict_GetItemString(PySys_GetObject("modules"), "torch");  // borrowed
    if (!torch) return false;
    tensor_type = PyObject_GetAttrString(torch, "Tensor");
    if (!tensor_type) {
      PyErr_Clear();
      return false;
    }
  }
  return PyObject_IsInstance(obj.ptr(), tensor_type) == 1;
}

HostRange tensor_range(py::handle t, const char* role) {
  if (!t.attr("is_cpu").cast<bool>())
    throw InvalidArgument(fmt::format("{}: a tensor on device '{}': copies take CPU tensors (tensor.cpu())", role,
                                      std::string(py::str(t.attr("device")))));
  if (!t.attr("is_contiguous")().cast<bool>())
    throw InvalidArgument(fmt::format(
        "{}: a non-contiguous tensor (shape {}, stride {}) is not one block of memory: pass tensor.contiguous()", role,
        std::string(py::str(t.attr("shape"))), std::string(py::str(t.attr("stride")()))));
  const auto bytes = t.attr("numel")().cast<std::size_t>() * t.attr("element_size")().cast<std::size_t>();
  const auto address = t.attr("data_ptr")().cast<std::uintptr_t>();
  return HostRange{reinterpret_cast<void*>(address), bytes, py::reinterpret_borrow<py::object>(t)};
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
