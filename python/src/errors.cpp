// The engine's errors in Python: one exception class per Status kind under spyre_dma.Error, the
// tools' input errors (BackendError, TraceError, ConfigError, OutputError), and the Status value
// ops complete with. Messages are the engine's, unchanged.
#include <array>
#include <string>

#include "native.hpp"
#include "spyre_dma/backend/registry.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "spyre_dma/traces/trace_io.hpp"

namespace spyre_dma::python {
namespace {

constexpr std::size_t kCodes = static_cast<std::size_t>(ErrorCode::kCallbackFailed) + 1;

// The classes, made once when the module loads and kept for the process (the module is never
// unloaded), so that the translator never looks them up by name.
struct Classes {
  PyObject* error = nullptr;
  std::array<PyObject*, kCodes> by_code{};
  PyObject* backend = nullptr;
  PyObject* trace = nullptr;
  PyObject* config = nullptr;
  PyObject* output = nullptr;
};
Classes& classes() {
  static Classes c;
  return c;
}

PyObject* new_class(py::module_& m, const char* name, const char* doc, py::tuple bases) {
  const std::string qualified = std::string("spyre_dma.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // the module keeps one reference; the table borrows it
  return cls;
}

py::object device_detail(const Status& s) {
  if (!s.device()) return py::none();
  const DeviceErrorDetail& d = *s.device();
  py::dict out;
  out["pipeline"] = std::string(hw::to_string(d.pipeline));
  out["tag"] = d.tag;
  out["status"] = std::string(hw::to_string(d.status));
  out["kind"] = std::string(hw::to_string(d.kind));
  out["field"] = std::string(hw::to_string(d.field));
  out["detail"] = d.detail;
  return std::move(out);
}

// Raises `cls(message)` with extra attributes.
void raise(PyObject* cls, const std::string& message, const py::dict& attributes) {
  py::object e = py::reinterpret_borrow<py::object>(cls)(message);
  for (const auto& [key, value] : attributes) py::setattr(e, key, value);
  PyErr_SetObject(cls, e.ptr());
}

void raise_status(const Status& s) {
  py::dict a;
  a["code"] = py::cast(s.code());
  a["message"] = s.message();
  a["device"] = device_detail(s);
  a["failed_op"] = s.failed_op() ? py::cast(s.failed_op()) : py::none();
  raise(classes().by_code[static_cast<std::size_t>(s.code())], s.message(), a);
}

}  // namespace

py::object status_object(const Status& s) { return py::cast(s); }

std::chrono::nanoseconds seconds_to_timeout(const py::object& seconds, std::chrono::nanoseconds fallback) {
  if (seconds.is_none()) return fallback;
  const double s = seconds.cast<double>();
  if (!(s >= 0)) throw InvalidArgument("timeout " + std::to_string(s) + ": expected seconds >= 0 (or None)");
  if (s > 1e9) return std::chrono::nanoseconds::max() / 2;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
}

void bind_errors(py::module_& m) {
  py::enum_<ErrorCode>(m, "ErrorCode", "The kinds of Status, as the engine's spyre_dma::ErrorCode.")
      .value("OK", ErrorCode::kOk)
      .value("INVALID_ARGUMENT", ErrorCode::kInvalidArgument)
      .value("OUT_OF_MEMORY", ErrorCode::kOutOfMemory)
      .value("DEVICE_ERROR", ErrorCode::kDeviceError)
      .value("IOMMU_FAULT", ErrorCode::kIommuFault)
      .value("DEVICE_TIMEOUT", ErrorCode::kDeviceTimeout)
      .value("DEVICE_FAULT", ErrorCode::kDeviceFault)
      .value("CANCELLED", ErrorCode::kCancelled)
      .value("WAIT_TIMEOUT", ErrorCode::kWaitTimeout)
      .value("CLOSED", ErrorCode::kClosed)
      .value("PEER_UNREACHABLE", ErrorCode::kPeerUnreachable)
      .value("REMOTE_ACCESS", ErrorCode::kRemoteAccess)
      .value("DEPENDENCY_FAILED", ErrorCode::kDependencyFailed)
      .value("CALLBACK_FAILED", ErrorCode::kCallbackFailed);

  py::class_<Status>(m, "Status",
                     "What an operation completed with: ok, or an error code, its message and, for errors the\n"
                     "device reported in an RB, the device's detail (pipeline, tag, status, kind, field).")
      .def_property_readonly("ok", &Status::ok, "True when the operation succeeded.")
      .def_property_readonly("code", &Status::code, "The ErrorCode.")
      .def_property_readonly("message", &Status::message, "The engine's message ('' when ok).")
      .def_property_readonly("device", &device_detail, "The device's report (dict) for device errors, else None.")
      .def_property_readonly(
          "failed_op", [](const Status& s) { return s.failed_op() ? py::cast(s.failed_op()) : py::none(); },
          "DEPENDENCY_FAILED: the id of the op that failed first (its status is in the message), else None.")
      .def("__bool__", &Status::ok)
      .def("__str__", &Status::to_string)
      .def("__repr__", [](const Status& s) { return "<spyre_dma.Status " + s.to_string() + ">"; })
      .def(
          "raise_if_error", [](const Status& s) { raise_if_error(s); },
          "Raises the exception class of the code (spyre_dma.InvalidArgument, ...) unless ok.");

  Classes& c = classes();
  c.error = new_class(m, "Error",
                      "Base of the engine's errors. Attributes: code (ErrorCode), message (str), device (dict\n"
                      "of the device's report for device errors, else None).",
                      py::make_tuple(py::handle(PyExc_RuntimeError)));
  const py::handle base(c.error);
  struct Kind {
    ErrorCode code;
    const char* name;
    const char* doc;
    PyObject* builtin;  // a matching built-in class it also derives from, or null
  };
  const Kind kinds[] = {
      {ErrorCode::kInvalidArgument, "InvalidArgument", "A request the engine refused; nothing was submitted.",
       PyExc_ValueError},
      {ErrorCode::kOutOfMemory, "OutOfMemory", "Device memory, IOVA space or host memory exhausted.", PyExc_MemoryError},
      {ErrorCode::kDeviceError, "DeviceError", "The device answered Error, Retry or Abend in an RB.", nullptr},
      {ErrorCode::kIommuFault, "IommuFault", "The device reached host memory it was not given.", nullptr},
      {ErrorCode::kDeviceTimeout, "DeviceTimeout", "The device did not answer a CB within cb_timeout.", nullptr},
      {ErrorCode::kDeviceFault, "DeviceFault", "The device misbehaved (an RB the engine cannot match, a broken ring).",
       nullptr},
      {ErrorCode::kCancelled, "Cancelled", "Cancelled before completion: engine reset or close.", nullptr},
      {ErrorCode::kWaitTimeout, "WaitTimeout", "A wait gave up; the awaited work itself may still complete.", nullptr},
      {ErrorCode::kClosed, "Closed", "The engine was closed.", nullptr},
      {ErrorCode::kPeerUnreachable, "PeerUnreachable",
       "The peer that owns the remote memory cannot be reached (never reached, or gone).", nullptr},
      {ErrorCode::kRemoteAccess, "RemoteAccess", "The peer refused the access: a key it never issued or revoked.",
       nullptr},
      {ErrorCode::kDependencyFailed, "DependencyFailed",
       "An op it depends on failed (an earlier op of its stream, or one before the event it waits on); it ran\n"
       "nothing. Attribute failed_op: the id of the op that failed first.",
       nullptr},
      {ErrorCode::kCallbackFailed, "CallbackFailed", "A host callback or host task raised; the message holds its text.",
       nullptr},
  };
  for (const Kind& k : kinds) {
    py::tuple bases = k.builtin ? py::make_tuple(base, py::handle(k.builtin)) : py::make_tuple(base);
    c.by_code[static_cast<std::size_t>(k.code)] = new_class(m, k.name, k.doc, bases);
  }
  c.by_code[static_cast<std::size_t>(ErrorCode::kOk)] = c.error;  // never raised
  c.backend = new_class(m, "BackendError",
                        "A backend refused: an unknown or unbuilt name, a setting it does not take or a value it\n"
                        "cannot use.",
                        py::make_tuple(py::handle(PyExc_ValueError)));
  c.trace = new_class(m, "TraceError",
                      "A trace that cannot be read or used. Attributes: file, line (1-based; 0: the whole file),\n"
                      "field (dotted key; '' the line as a whole), message.",
                      py::make_tuple(py::handle(PyExc_ValueError)));
  c.config = new_class(m, "ConfigError",
                       "A model configuration that cannot be used. Attributes: file, key_path, message, line,\n"
                       "column.",
                       py::make_tuple(py::handle(PyExc_ValueError)));
  c.output = new_class(m, "OutputError", "An output file that could not be written. Attributes: path.",
                       py::make_tuple(py::handle(PyExc_OSError)));

  // Registered translators are tried newest first, so this one sees the project's exceptions
  // before pybind11's defaults (which would turn them into a plain ValueError or RuntimeError).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      raise_status(e.status());
    } catch (const Error& e) {
      raise_status(Status(e.code(), e.what()));
    } catch (const backend::BackendError& e) {
      raise(classes().backend, e.what(), py::dict());
    } catch (const traces::TraceError& e) {
      py::dict a;
      a["file"] = e.file();
      a["line"] = e.line();
      a["field"] = e.field();
      a["message"] = e.message();
      raise(classes().trace, e.what(), a);
    } catch (const model::ConfigError& e) {
      py::dict a;
      a["file"] = e.file();
      a["key_path"] = e.key_path();
      a["message"] = e.message();
      a["line"] = e.line();
      a["column"] = e.column();
      raise(classes().config, e.what(), a);
    } catch (const traces::OutputError& e) {
      py::dict a;
      a["path"] = e.path();
      raise(classes().output, e.what(), a);
    }
  });
}

}  // namespace spyre_dma::python
