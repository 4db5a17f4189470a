// JSON trees (the project's reports, configurations and trace records) as plain Python data.
#include <string>

#include "native.hpp"

namespace spyre_dma::python {

py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out(j.size());
      std::size_t i = 0;
      for (const auto& v : j) out[i++] = to_python(v);
      return std::move(out);
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[py::str(it.key())] = to_python(it.value());
      return std::move(out);
    }
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded: break;
  }
  return py::none();
}

nlohmann::json from_python(py::handle h, const char* what) {
  if (h.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) {
    if (h.cast<py::int_>() < py::int_(0)) return h.cast<std::int64_t>();
    return h.cast<std::uint64_t>();
  }
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  if (py::isinstance<py::dict>(h)) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : h.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k))
        throw InvalidArgument(std::string(what) + ": a key of type " + std::string(py::str(k.get_type().attr("__name__"))) +
                              " (JSON keys are strings)");
      out[k.cast<std::string>()] = from_python(v, what);
    }
    return out;
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : h) out.push_back(from_python(v, what));
    return out;
  }
  throw InvalidArgument(std::string(what) + ": a value of type " + std::string(py::str(h.get_type().attr("__name__"))) +
                        " has no JSON form");
}

}  // namespace spyre_dma::python
