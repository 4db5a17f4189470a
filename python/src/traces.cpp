// The trace tools in Python: import (Kineto, bandwidthTest, nvbandwidth, rocm-bandwidth-test,
// hipBusBandwidth), capture (Engine(capture=True)),
// read and write, replay, compare and calibrate; the model's presets and the backends. Results
// are objects with plain-data views (dicts and lists, the same keys as the command line's JSON)
// and pandas DataFrames (to_frame(), pandas imported only then).
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <sstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "native.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/model/config_loader.hpp"
#include "spyre_dma/traces/bandwidth_test.hpp"
#include "spyre_dma/traces/calibrate.hpp"
#include "spyre_dma/traces/compare.hpp"
#include "spyre_dma/traces/kineto.hpp"
#include "spyre_dma/traces/nvbandwidth.hpp"
#include "spyre_dma/traces/output_file.hpp"
#include "spyre_dma/traces/replay.hpp"
#include "spyre_dma/traces/rocm_bandwidth.hpp"
#include "spyre_dma/traces/trace_io.hpp"
#include "trace_object.hpp"

namespace spyre_dma::python {
namespace {

using TracePtr = std::shared_ptr<traces::Trace>;

// A trace's header, allocations and ops as the file format has them (traces/README.md): the
// writer makes the JSON, so the Python view cannot drift from the format.
struct Records {
  nlohmann::json header;
  std::vector<nlohmann::json> allocations, ops;
};
Records records(const traces::Trace& t) {
  std::ostringstream out;
  traces::write_trace(t, out);
  std::istringstream in(out.str());
  Records r;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line);
    if (first) {
      r.header = std::move(j);
      first = false;
    } else if (j.contains("alloc")) {
      r.allocations.push_back(std::move(j["alloc"]));
    } else if (j.contains("op")) {
      r.ops.push_back(std::move(j["op"]));
    }
  }
  return r;
}

py::list to_list(const std::vector<nlohmann::json>& v) {
  py::list out;
  for (const auto& j : v) out.append(to_python(j));
  return out;
}

// A DataFrame of `rows` (dicts) with the columns in `order` first, as the file formats and the
// command line list them (JSON objects come back with their keys sorted), then any others.
py::object data_frame(const py::object& rows, std::initializer_list<const char*> order) {
  py::object frame = py::module_::import("pandas").attr("DataFrame")(rows);
  py::list columns;
  const py::object present = frame.attr("columns");
  for (const char* c : order)
    if (present.attr("__contains__")(c).cast<bool>()) columns.append(c);
  for (const auto& c : present)
    if (!columns.contains(c)) columns.append(c);
  return frame[columns];
}
constexpr std::initializer_list<const char*> kOpColumns = {
    "id", "device", "stream", "kind", "bytes", "host", "dst_alloc", "dst_offset", "src_alloc", "src_offset", "pattern",
    "compute_ns", "event", "deps", "issue_ns", "start_ns", "duration_ns", "host_start_ns", "host_duration_ns"};
constexpr std::initializer_list<const char*> kComparedColumns = {
    "id", "direction", "measure", "concurrent", "device", "bytes", "size_class", "captured_ns", "simulated_ns",
    "rel_error", "bound"};
constexpr std::initializer_list<const char*> kGroupColumns = {
    "direction", "size_class", "ops", "bounds", "median_abs_rel_error", "p90_abs_rel_error", "bias",
    "max_abs_rel_error"};

// A model configuration named the way the command line names it; "" where not given.
std::string or_empty(const std::optional<std::string>& s) { return s ? *s : std::string(); }

// calibrate()'s result, with the source of the trace it was fitted on (its configuration file
// says where it came from).
struct Calibration {
  traces::CalibrationResult result;
  std::string source;
};

traces::ReplayResult replay_trace(const traces::Trace& trace, const std::string& backend,
                                  const std::optional<std::string>& preset, const std::optional<std::string>& config,
                                  const std::optional<std::string>& fidelity, const py::object& settings,
                                  std::optional<std::uint64_t> seed, const traces::ReplayOptions& options) {
  // On sim, as the command line's compare and calibrate: the configuration given, else the base
  // the trace's header suggests (its link's generation and width).
  if (backend == "sim" && settings.is_none() && !seed) {
    const model::SimConfig c = traces::model_config_for(or_empty(preset), or_empty(config), &trace.header,
                                                        or_empty(fidelity), nullptr);
    py::gil_scoped_release nogil;
    return traces::replay_on_sim(trace, c, options);
  }
  backend::Settings s;
  if (!settings.is_none())
    for (const auto& [k, v] : settings.cast<py::dict>()) s.values[py::str(k)] = std::string(py::str(v));
  if (preset) s.values["preset"] = *preset;
  if (config) s.values["config"] = *config;
  if (fidelity) s.values["fidelity"] = *fidelity;
  s.seed = seed;
  py::gil_scoped_release nogil;
  if (trace.header.devices > 1) {  // device d's ops on device d of as many opened together
    s.devices = trace.header.devices;
    return traces::replay(trace, backend::builtin().open_devices(backend, s), options);
  }
  return traces::replay(trace, backend::builtin().open(backend, s), options);
}

}  // namespace

py::object make_trace_object(traces::Trace trace) { return py::cast(std::make_shared<traces::Trace>(std::move(trace))); }

void bind_traces(py::module_& m) {
  py::class_<traces::Trace, TracePtr>(m, "Trace",
                                      "A DMA workload: a header, device allocations and ops in issue order, in the\n"
                                      "JSON Lines format of traces/README.md. header, allocations and ops are plain\n"
                                      "data with the format's keys.")
      .def_static(
          "load",
          [](const std::string& path) {
            py::gil_scoped_release nogil;
            return std::make_shared<traces::Trace>(traces::read_trace(path));
          },
          py::arg("path"), "Reads a trace file (plain or gzip). Raises TraceError naming line and field.")
      .def_static(
          "from_jsonl",
          [](const std::string& text, const std::string& name) {
            std::istringstream in(text);
            return std::make_shared<traces::Trace>(traces::parse_trace(in, name));
          },
          py::arg("text"), py::arg("name") = "<string>", "Parses a trace from JSON Lines text.")
      .def(
          "to_jsonl",
          [](const traces::Trace& t) {
            std::ostringstream out;
            traces::write_trace(t, out);
            return out.str();
          },
          "The trace as JSON Lines text.")
      .def(
          "save",
          [](const traces::Trace& t, const std::string& path) {
            traces::check_output_path(path, "path");
            py::gil_scoped_release nogil;
            traces::write_trace_file(t, path);
          },
          py::arg("path"), "Writes the trace atomically (never half-written). Raises OutputError, TraceError.")
      .def("check", &traces::check_trace, "'' when consistent, else what is wrong (op or allocation id, field, value).")
      .def_property_readonly("header", [](const traces::Trace& t) { return to_python(records(t).header); })
      .def_property_readonly("allocations", [](const traces::Trace& t) { return to_list(records(t).allocations); })
      .def_property_readonly("ops", [](const traces::Trace& t) { return to_list(records(t).ops); })
      .def(
          "to_frame", [](const traces::Trace& t) { return data_frame(to_list(records(t).ops), kOpColumns); },
          "The ops as a pandas DataFrame, one row per op, the format's keys as columns.")
      .def("__len__", [](const traces::Trace& t) { return t.ops.size(); })
      .def("__repr__", [](const traces::Trace& t) {
        return fmt::format("<spyre_dma.Trace {}: {} ops, {} allocations>", t.header.source, t.ops.size(),
                           t.allocations.size());
      });

  m.def(
      "import_kineto",
      [](const std::string& path, std::optional<std::string> device, std::optional<std::string> link) {
        traces::ImportReport report;
        traces::Trace t;
        {
          py::gil_scoped_release nogil;
          t = traces::import_kineto(path, report);
        }
        if (device) t.header.device = *device;
        if (link) t.header.link = *link;
        py::dict r;
        r["events_seen"] = report.events_seen;
        r["memcpy"] = report.memcpy;
        r["memset"] = report.memset;
        r["kernels"] = report.kernels;
        r["joined_to_host"] = report.joined_to_host;
        r["ignored"] = report.ignored;
        r["unknown"] = report.unknown;
        r["malformed"] = report.malformed;
        r["notes"] = report.notes;
        return py::make_tuple(make_trace_object(std::move(t)), r);
      },
      py::arg("path"), py::kw_only(), py::arg("device") = py::none(), py::arg("link") = py::none(),
      "Imports a PyTorch profiler (Kineto) Chrome-trace JSON file, plain or gzip. Returns (trace,\n"
      "report): the report counts what was imported, ignored, unknown and malformed. link (e.g.\n"
      "'PCIe Gen4 x16') tells replay and calibrate which preset to start from.");

  m.def(
      "import_bandwidth_test",
      [](const std::string& path, const std::string& device, const std::string& link) {
        py::gil_scoped_release nogil;
        return std::make_shared<traces::Trace>(
            traces::import_bandwidth_test(path, traces::BandwidthTestImport{device, link}));
      },
      py::arg("path"), py::kw_only(), py::arg("device") = "", py::arg("link") = "",
      "Imports NVIDIA bandwidthTest result lines (--csv) as back-to-back copies per size.");

  m.def(
      "import_nvbandwidth",
      [](const std::string& path, const std::string& device, const std::string& link, std::uint64_t buffer_bytes) {
        traces::NvbandwidthReport r;
        traces::Trace t;
        {
          py::gil_scoped_release nogil;
          t = traces::import_nvbandwidth(path, traces::BandwidthTestImport{device, link}, r, buffer_bytes);
        }
        py::dict d;
        d["version"] = r.version;
        d["testcases"] = r.testcases;
        d["imported"] = r.imported;
        d["bidirectional"] = r.bidirectional;
        d["concurrent"] = r.concurrent;
        d["latency"] = r.latency;
        d["points"] = r.points;
        d["groups"] = r.groups;
        d["latency_points"] = r.latency_points;
        d["gpus"] = r.gpus;
        d["buffer_bytes"] = r.buffer_bytes;
        d["buffer_bytes_assumed"] = r.buffer_bytes_assumed;
        py::dict skipped;
        skipped["not_passed"] = r.not_passed;
        skipped["sm_copies"] = r.sm_copies;
        skipped["between_gpus"] = r.between_gpus;
        skipped["multinode"] = r.multinode;
        skipped["unknown"] = r.unknown;
        skipped["without_value"] = r.without_value;
        d["skipped"] = skipped;
        d["cells_skipped"] = r.cells_skipped;
        d["devices"] = r.devices;
        d["notes"] = r.notes;
        return py::make_tuple(make_trace_object(std::move(t)), d);
      },
      py::arg("path"), py::kw_only(), py::arg("device") = "", py::arg("link") = "", py::arg("buffer_bytes") = 0,
      "Imports nvbandwidth's JSON output (nvbandwidth --json): its one-way copy-engine testcases as\n"
      "back-to-back copies of the buffer size (buffer_bytes: the --bufferSize it ran with; 0: its\n"
      "version's default), its bidirectional and all-GPU host testcases as groups of copies run at\n"
      "once on the GPUs' devices, host_device_latency_sm as latency points. Returns (trace, report).");

  const auto rocm = [](auto import) {
    return [import](const std::string& path, const std::string& device, const std::string& link) {
      traces::RocmBandwidthReport r;
      traces::Trace t;
      {
        py::gil_scoped_release nogil;
        t = import(path, traces::BandwidthTestImport{device, link}, r);
      }
      py::dict d;
      d["results"] = r.results;
      d["imported"] = r.imported;
      d["pairs"] = r.pairs;
      py::dict skipped;
      skipped["bidirectional"] = r.bidirectional;
      skipped["other_path"] = r.other_path;
      skipped["no_value"] = r.no_value;
      skipped["repeated"] = r.repeated;
      skipped["unknown_direction"] = r.unknown_direction;
      d["skipped"] = skipped;
      d["device"] = r.device;
      d["notes"] = r.notes;
      return py::make_tuple(make_trace_object(std::move(t)), d);
    };
  };
  m.def("import_rocm_bandwidth_test", rocm(&traces::import_rocm_bandwidth_test), py::arg("path"), py::kw_only(),
        py::arg("device") = "", py::arg("link") = "",
        "Imports a rocm-bandwidth-test log (its per-size tables and matrices) as back-to-back copies,\n"
        "its bidirectional host<->GPU results as pairs of copies timed by their span. Returns\n"
        "(trace, report).");
  m.def("import_hip_bus_bandwidth", rocm(&traces::import_hip_bus_bandwidth), py::arg("path"), py::kw_only(),
        py::arg("device") = "", py::arg("link") = "",
        "Imports a hipBusBandwidth log (H2D and D2H, pinned or pageable, per size) as back-to-back\n"
        "copies. Returns (trace, report).");

  py::class_<traces::ReplayResult>(m, "ReplayResult", "A replay's per-op device times and its data check.")
      .def_readonly("total_ns", &traces::ReplayResult::total_ns, "First device start to last device end (ns).")
      .def_readonly("data_ok", &traces::ReplayResult::data_ok, "Whether every op's data checked out.")
      .def_readonly("data_error", &traces::ReplayResult::data_error, "The first mismatch or failed op, else ''.")
      .def_property_readonly("ops", [](const traces::ReplayResult& r) { return to_python(r.to_json()["ops"]); },
                             "Per op: id, start_ns (from the first start), duration_ns; host_start_ns and\n"
                             "host_duration_ns, its host time, where the device gives it (else 0).")
      .def("to_dict", [](const traces::ReplayResult& r) { return to_python(r.to_json()); })
      .def("to_frame",
           [](const traces::ReplayResult& r) {
             return data_frame(to_python(r.to_json()["ops"]),
                               {"id", "start_ns", "duration_ns", "host_start_ns", "host_duration_ns"});
           })
      .def("summary", &traces::ReplayResult::summary)
      .def("__repr__", [](const traces::ReplayResult& r) { return "<spyre_dma.ReplayResult " + r.summary() + ">"; });

  m.def(
      "replay",
      [](const TracePtr& trace, const std::string& backend, std::optional<std::string> preset,
         std::optional<std::string> config, std::optional<std::string> fidelity, const py::object& settings,
         std::optional<std::uint64_t> seed, bool honour_start_times, bool verify_data, double timeout,
         const std::string& perfetto, std::size_t staging_buffer_bytes) {
        traces::ReplayOptions o;
        o.honour_start_times = honour_start_times;
        o.verify_data = verify_data;
        o.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout * 1000));
        o.perfetto_path = perfetto;
        o.staging_buffer_bytes = staging_buffer_bytes;
        if (!perfetto.empty()) traces::check_output_path(perfetto, "perfetto");
        return replay_trace(*trace, backend, preset, config, fidelity, settings, seed, o);
      },
      py::arg("trace"), py::arg("backend") = "sim", py::kw_only(), py::arg("preset") = py::none(),
      py::arg("config") = py::none(), py::arg("fidelity") = py::none(), py::arg("settings") = py::none(),
      py::arg("seed") = py::none(), py::arg("honour_start_times") = false, py::arg("verify_data") = true,
      py::arg("timeout") = 60.0, py::arg("perfetto") = "", py::arg("staging_buffer_bytes") = 0,
      "Replays a trace through the engine on a fresh device of `backend`. On sim without settings or\n"
      "seed, the model configuration is config, else preset, else the base the trace's link suggests\n"
      "(as spyre-dma trace compare). honour_start_times holds ops to their captured starts; perfetto\n"
      "writes the op timeline; staging_buffer_bytes is the engine's staging piece (0: default).");

  py::class_<traces::Comparison>(m, "Comparison",
                                 "A captured trace against its replay: per-op relative error and statistics by\n"
                                 "direction and size class.")
      .def_readonly("source", &traces::Comparison::source)
      .def_property_readonly("timing", [](const traces::Comparison& c) { return std::string(traces::to_string(c.timing)); },
                             "Which time was compared: 'device' or 'host'.")
      .def_readonly("skipped", &traces::Comparison::skipped)
      .def_property_readonly("ops", [](const traces::Comparison& c) { return to_python(c.to_json()["ops"]); })
      .def_property_readonly("groups", [](const traces::Comparison& c) { return to_python(c.to_json()["groups"]); })
      .def("to_dict", [](const traces::Comparison& c) { return to_python(c.to_json()); })
      .def("to_frame", [](const traces::Comparison& c) { return data_frame(to_python(c.to_json()["ops"]), kComparedColumns); },
           "The compared ops as a DataFrame (captured_ns, simulated_ns, rel_error, ...).")
      .def("groups_frame",
           [](const traces::Comparison& c) { return data_frame(to_python(c.to_json()["groups"]), kGroupColumns); })
      .def("table", &traces::Comparison::table, "The groups as the command line prints them.")
      .def(
          "worst", [](const traces::Comparison& c, const traces::Trace& captured, std::size_t n) { return c.worst(captured, n); },
          py::arg("captured"), py::arg("n") = 5,
          "The n ops off the most, worst first, with their stream and captured start (trace compare --top).");

  m.def(
      "compare",
      [](const TracePtr& captured, const traces::ReplayResult& replayed, const std::string& timing) {
        traces::Timing t;
        try {
          t = traces::timing_from_string(timing);
        } catch (const std::invalid_argument& e) {
          throw py::value_error(e.what());
        }
        return traces::compare(*captured, replayed, t);
      },
      py::arg("captured"), py::arg("replayed"), py::kw_only(), py::arg("timing") = "device",
      "Compares every copy and fill of `captured` that has a captured duration with its replay:\n"
      "timing='device' its duration_ns against the replayed device time, 'host' its host_duration_ns\n"
      "against the replayed host time (staging included).");

  py::class_<Calibration>(m, "CalibrationResult", "A fitted model configuration and how well it fits.")
      .def_property_readonly("rms_log_error", [](const Calibration& c) { return c.result.rms_log_error; })
      .def_property_readonly("initial_rms_log_error", [](const Calibration& c) { return c.result.initial_rms_log_error; })
      .def_property_readonly("replays", [](const Calibration& c) { return c.result.replays; })
      .def_property_readonly("parameters", [](const Calibration& c) { return to_python(c.result.to_json()["parameters"]); },
                             "Each fitted parameter: key, value, its 90% interval, its physical bounds and why.")
      .def_property_readonly("unidentified", [](const Calibration& c) { return c.result.unidentified; },
                             "Keys the fit copies could not determine, left at the base's values.")
      .def_property_readonly("intervals", [](const Calibration& c) { return to_python(c.result.to_json()["intervals"]); },
                             "Every compared copy's 90% prediction interval (captured, simulated, lo, hi, inside).")
      .def_property_readonly("holdout_coverage", [](const Calibration& c) { return c.result.holdout_coverage; })
      .def_property_readonly("staging_buffer_bytes", [](const Calibration& c) { return c.result.staging_buffer_bytes; })
      .def_property_readonly("config", [](const Calibration& c) { return to_python(model::to_json(c.result.config)); },
                             "The fitted configuration, every key.")
      .def_property_readonly("fit", [](const Calibration& c) { return c.result.fit; }, "A Comparison on the fit copies.")
      .def_property_readonly("holdout", [](const Calibration& c) { return c.result.holdout; },
                             "A Comparison on the held-out copies.")
      .def("preset_json", [](const Calibration& c) { return to_python(c.result.preset_json()); },
           "The configuration file's content: the base preset and what the fit changed.")
      .def(
          "save_config",
          [](const Calibration& c, const std::string& path) {
            traces::check_output_path(path, "path");
            c.result.write_config_file(path, c.source);
          },
          py::arg("path"), "Writes the configuration file (atomically), as spyre-dma trace calibrate --out.")
      .def("to_dict", [](const Calibration& c) { return to_python(c.result.to_json()); })
      .def("summary", [](const Calibration& c) { return c.result.summary(); });

  m.def(
      "calibrate",
      [](const py::object& traces_given, std::optional<std::string> preset, std::optional<std::string> config,
         std::optional<std::string> fidelity, const std::string& fit, std::vector<std::string> parameters,
         std::size_t max_replays, std::size_t fit_copies_per_size, std::size_t staging_buffer_bytes,
         std::vector<std::size_t> fit_ranks, std::size_t node) {
        // One trace, or several ranks' traces of one node (fitted together, calibrate_together).
        std::vector<TracePtr> ranks;
        if (py::isinstance<traces::Trace>(traces_given)) {
          ranks.push_back(traces_given.cast<TracePtr>());
        } else {
          for (const py::handle h : traces_given.cast<py::sequence>()) ranks.push_back(h.cast<TracePtr>());
          if (ranks.empty()) throw std::invalid_argument("calibrate: an empty list of traces");
        }
        if (!fit_ranks.empty() && ranks.size() == 1) throw std::invalid_argument("calibrate: fit_ranks needs a list of traces");
        if (node > 1 && ranks.size() > 1) throw std::invalid_argument("calibrate: node takes one trace (the rank's)");
        const TracePtr& trace = ranks.front();
        traces::CalibrateOptions o;
        o.base = traces::model_config_for(or_empty(preset), or_empty(config), &trace->header, or_empty(fidelity),
                                          nullptr);
        if (fidelity) o.fidelity = o.base.fidelity;
        o.fit = traces::parse_selection(fit);
        o.parameters = std::move(parameters);
        o.max_replays = max_replays;
        o.fit_copies_per_size = fit_copies_per_size;
        o.staging_buffer_bytes = staging_buffer_bytes;
        o.fit_ranks = std::move(fit_ranks);
        o.node_devices = node;
        Calibration c;
        {
          py::gil_scoped_release nogil;
          if (ranks.size() == 1) {
            c.result = traces::calibrate(*trace, o);
          } else {
            std::vector<const traces::Trace*> given;
            for (const TracePtr& t : ranks) given.push_back(t.get());
            c.result = traces::calibrate_together(given, o);
          }
        }
        c.source = ranks.size() == 1 ? trace->header.source : c.result.fit.source;
        return c;
      },
      py::arg("trace"), py::kw_only(), py::arg("preset") = py::none(), py::arg("config") = py::none(),
      py::arg("fidelity") = py::none(), py::arg("fit") = "all", py::arg("parameters") = std::vector<std::string>{},
      py::arg("max_replays") = 60, py::arg("fit_copies_per_size") = 2, py::arg("staging_buffer_bytes") = 0,
      py::arg("fit_ranks") = std::vector<std::size_t>{}, py::arg("node") = 0,
      "Fits the model's parameters to the trace's captured durations (as spyre-dma trace calibrate).\n"
      "A list of traces is several ranks of one node, fitted together: trace i replayed on device i\n"
      "of a server of one device per trace, arranged as the configuration's topology; fit_ranks: the ranks whose\n"
      "copies are fitted (default: all), the others replay alongside and are held out.\n"
      "fit selects the fit copies ('all', 'below:4MiB', 'atleast:1MB', 'range:64KiB:4MiB', 'even',\n"
      "'odd'); the others are the holdout. parameters: configuration keys to fit (default: chosen\n"
      "from the trace). node: the trace is one rank of a node of this many devices, the same profile on\n"
      "the others as their traffic. The result gives every parameter inside its physical bounds with\n"
      "its uncertainty, and every compared copy a 90% prediction interval (docs/traces.md).");

  m.def(
      "model_config",
      [](std::optional<std::string> preset, std::optional<std::string> config, std::optional<std::string> fidelity) {
        return to_python(model::to_json(
            traces::model_config_for(or_empty(preset), or_empty(config), nullptr, or_empty(fidelity), nullptr)));
      },
      py::kw_only(), py::arg("preset") = py::none(), py::arg("config") = py::none(), py::arg("fidelity") = py::none(),
      "The model's resolved configuration (every key) for a preset or configuration file.");

  m.def(
      "presets",
      [] {
        py::list out;
        for (const auto& p : model::preset_catalog()) {
          py::dict d;
          d["name"] = p.name;
          d["summary"] = p.summary;
          d["source"] = p.source;
          out.append(std::move(d));
        }
        return out;
      },
      "The model's presets: name, what it models, where its numbers come from. The first is the default.");

  m.def(
      "backends",
      [] {
        const backend::Registry& r = backend::builtin();
        py::list out;
        for (const std::string& name : r.names()) {
          const backend::Backend* b = r.find(name);
          py::dict d;
          d["name"] = name;
          d["summary"] = b->summary();
          d["unavailable"] = b->unavailable();
          py::list settings;
          for (const auto& s : b->settings()) settings.append(py::make_tuple(s.name, s.help));
          d["settings"] = settings;
          out.append(std::move(d));
        }
        return out;
      },
      "The backends of this build: name, summary, why it cannot open here ('' when it can), settings.");
}

}  // namespace spyre_dma::python
