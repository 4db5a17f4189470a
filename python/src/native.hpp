// What the files of the extension module (spyre_dma._native) share: the binding functions each
// file defines, the JSON <-> Python conversion, and the raising of typed errors.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "spyre_dma/status.hpp"

namespace spyre_dma::python {

namespace py = pybind11;

// Each binds one part of the module (errors.cpp, engine.cpp, traces.cpp).
void bind_errors(py::module_& m);
void bind_engine(py::module_& m);
void bind_traces(py::module_& m);
void bind_host_pool(py::module_& m);  // engine.cpp

// JSON trees as plain Python data (dict, list, str, int, float, bool, None) and back. from_python
// throws InvalidArgument naming `what` and the type it cannot represent.
py::object to_python(const nlohmann::json& j);
nlohmann::json from_python(py::handle h, const char* what);

// A Status that is not ok, carried to the exception translator, which raises the Python class of
// its code with its message and device detail (errors.cpp).
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const Status& status() const noexcept { return status_; }
  const char* what() const noexcept override { return status_.message().c_str(); }

 private:
  Status status_;
};
inline void raise_if_error(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}
// The Python Status object of `s` (spyre_dma.Status).
py::object status_object(const Status& s);

// A timeout given in seconds (None: the engine's default wait); InvalidArgument when negative.
std::chrono::nanoseconds seconds_to_timeout(const py::object& seconds, std::chrono::nanoseconds fallback);

}  // namespace spyre_dma::python
