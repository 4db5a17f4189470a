#include "host_memory.hpp"

#include <fmt/format.h>

#include <string>
#include <unordered_map>

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

// One attribute or method result of a tensor, by a name interned once (this runs per copy).
py::object tensor_get(py::handle t, const char* name, bool call) {
  static std::unordered_map<const char*, PyObject*> names;  // kept for the process
  PyObject*& n = names[name];
  if (!n) n = PyUnicode_InternFromString(name);
  PyObject* r = call ? PyObject_CallMethodNoArgs(t.ptr(), n) : PyObject_GetAttr(t.ptr(), n);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

HostRange tensor_range(py::handle t, const char* role) {
  if (tensor_get(t, "is_cpu", false).ptr() != Py_True)
    throw InvalidArgument(fmt::format("{}: a tensor on device '{}': copies take CPU tensors (tensor.cpu())", role,
                                      std::string(py::str(t.attr("device")))));
  if (tensor_get(t, "is_contiguous", true).ptr() != Py_True)
    throw InvalidArgument(fmt::format(
        "{}: a non-contiguous tensor (shape {}, stride {}) is not one block of memory: pass tensor.contiguous()", role,
        std::string(py::str(t.attr("shape"))), std::string(py::str(t.attr("stride")()))));
  const auto bytes = tensor_get(t, "numel", true).cast<std::size_t>() * tensor_get(t, "element_size", true).cast<std::size_t>();
  const auto address = tensor_get(t, "data_ptr", true).cast<std::uintptr_t>();
  // The storage, held beside the tensor: set_() points the tensor elsewhere and would free the
  // memory the copy uses; a reference to the storage keeps it (untyped_storage from torch 2,
  // storage before it).
  static const bool untyped = PyObject_HasAttrString(t.ptr(), "untyped_storage") == 1;
  py::object storage = tensor_get(t, untyped ? "untyped_storage" : "storage", true);
  return HostRange{reinterpret_cast<void*>(address), bytes,
                   py::make_tuple(py::reinterpret_borrow<py::object>(t), std::move(storage)), true};
}

// Takes the buffer with the fewest demands (one C-contiguous block, no format, shape or strides),
// which is also the cheapest export (numpy builds none of those). The buffer is released when the
// returned capsule is, under the GIL.
py::object simple_buffer(py::handle obj, bool writable, void** data, std::size_t* bytes) {
  // PyMem: the interpreter's allocator (the GIL is held here and where it is freed).
  auto* view = static_cast<Py_buffer*>(PyMem_Malloc(sizeof(Py_buffer)));
  if (!view) throw std::bad_alloc();
  if (PyObject_GetBuffer(obj.ptr(), view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) != 0) {
    PyMem_Free(view);
    PyErr_Clear();
    return py::object();
  }
  *data = view->buf;
  *bytes = static_cast<std::size_t>(view->len);
  return py::capsule(view, [](void* p) {
    auto* v = static_cast<Py_buffer*>(p);
    PyBuffer_Release(v);
    PyMem_Free(v);
  });
}

}  // namespace

HostRange host_range(py::handle obj, bool writable, const char* role) {
  if (PyObject_CheckBuffer(obj.ptr())) {
    HostRange r;
    // Writable first, so the range knows what it may be used for; read-only exporters then
    // answer the plain request.
    if ((r.keep = simple_buffer(obj, true, &r.data, &r.bytes))) return r;
    if (!writable && (r.keep = simple_buffer(obj, false, &r.data, &r.bytes))) {
      r.writable = false;
      return r;
    }
    // Refused: find out why with a full view (and take a Fortran-ordered block, which the simple
    // request refuses, as the one contiguous block it is).
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
    const bool view_writable = !b->readonly;
    return HostRange{b->buf, static_cast<std::size_t>(b->len), std::move(view), view_writable};
  }
  if (is_torch_tensor(obj)) return tensor_range(obj, role);
  throw InvalidArgument(fmt::format("{}: a {} is not host memory: pass an object with the buffer protocol (bytes, "
                                    "bytearray, memoryview, a numpy array) or a CPU torch tensor",
                                    role, type_name(obj)));
}

}  // namespace spyre_dma::python
