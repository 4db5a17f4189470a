// The engine in Python: Engine, Stream, Op, Event, DeviceBuffer, HostBuffer, and SharedHostPool.
//
// Lifetimes. Every Python object made from an engine holds the engine's handle, so the engine
// lives while any of them does, or until Engine.close() (after which they fail with Closed, as the
// C++ handles do). Python memory an in-flight op reads or writes, and the Python callables it will
// call, are held by the handle until the op's completion callback marks it done; the list is
// pruned under the GIL, so no Python object is ever released on an engine thread.
//
// The GIL. It is released while the engine submits, waits, resets or closes, and taken by engine
// threads only to run Python callables (on_complete, host_callback). Engines still open when the
// interpreter exits are closed by an atexit hook first (spyre_dma/__init__.py), while engine
// threads can still take the GIL.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "host_memory.hpp"
#include "native.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "spyre_dma/traces/recorder.hpp"
#include "trace_object.hpp"

namespace spyre_dma::python {
namespace {

using DoneFlag = std::atomic<bool>;

class EngineHandle {
 public:
  EngineHandle(std::string backend, backend::Instance instance, std::shared_ptr<Engine> engine,
               std::shared_ptr<traces::TraceRecorder> recorder)
      : backend_(std::move(backend)),
        host_driven_(instance.device->describe().progress == Progress::kHostDriven),
        instance_(std::move(instance)),
        engine_(std::move(engine)),
        recorder_(std::move(recorder)) {}
  ~EngineHandle() { close(); }
  EngineHandle(const EngineHandle&) = delete;
  EngineHandle& operator=(const EngineHandle&) = delete;

  // For calls made with the GIL held (close() cannot run meanwhile).
  Engine& engine() {
    if (!engine_) throw Closed("the engine is closed");
    return *engine_;
  }
  // For calls that release the GIL: the caller's reference keeps the engine alive should another
  // thread close() it meanwhile (see without_gil()).
  std::shared_ptr<Engine> share() {
    if (!engine_) throw Closed("the engine is closed");
    return engine_;
  }
  bool closed() const noexcept { return engine_ == nullptr; }
  // A device that advances only when the host lets it (sim, rtl): each poll is a step of it.
  bool host_driven() const noexcept { return host_driven_; }
  const std::string& backend() const noexcept { return backend_; }
  const backend::Instance& instance() {
    engine();  // the capabilities belong to the device, gone with the engine
    return instance_;
  }
  const std::shared_ptr<traces::TraceRecorder>& recorder() const noexcept { return recorder_; }

  // Waits for in-flight work (bounded by cb_timeout), cancels the rest, releases the device; then
  // drops every Python object the engine held. Idempotent. Should another thread be inside a call
  // that released the GIL (a synchronize), the engine goes when that call returns, and what its ops
  // hold is dropped by a later prune.
  void close() {
    if (engine_) {
      std::shared_ptr<Engine> engine = std::move(engine_);
      backend::Instance instance = std::move(instance_);
      instance_ = {};
      if (PyGILState_Check()) {
        py::gil_scoped_release nogil;
        engine.reset();
        instance = {};
      } else {
        engine.reset();
        instance = {};
      }
    }
    if (PyGILState_Check()) prune();
  }

  // A flag for one op's completion callback to set, from a pool of the handle's: its address
  // stays valid until the engine is gone (a std::deque never moves its elements), so the callback
  // holds a plain pointer and needs no allocation of its own. Called with the GIL.
  DoneFlag* take_flag() {
    if (free_flags_.empty()) return &flags_.emplace_back(false);
    DoneFlag* f = free_flags_.back();
    free_flags_.pop_back();
    return f;
  }
  // Holds `keep` until `done` is set by the op's completion callback. Called with the GIL.
  void keep(DoneFlag* done, py::object keep) {
    if (pending_.size() >= prune_at_) prune();
    pending_.push_back(Pending{done, std::move(keep)});
  }
  // Drops what completed ops held and returns their flags to the pool; amortised O(1) per op
  // over keep() calls.
  void prune() {
    std::size_t out = 0;
    for (Pending& p : pending_) {
      if (p.done->load(std::memory_order_acquire)) {
        p.done->store(false, std::memory_order_relaxed);
        free_flags_.push_back(p.done);
        p.keep = py::object();
      } else {
        pending_[out++] = std::move(p);
      }
    }
    pending_.resize(out);
    prune_at_ = std::max<std::size_t>(64, 2 * out);
  }

 private:
  struct Pending {
    DoneFlag* done;
    py::object keep;
  };
  std::string backend_;
  bool host_driven_ = false;
  backend::Instance instance_;
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<traces::TraceRecorder> recorder_;
  std::vector<Pending> pending_;
  std::deque<DoneFlag> flags_;
  std::vector<DoneFlag*> free_flags_;
  std::size_t prune_at_ = 64;
};
using Handle = std::shared_ptr<EngineHandle>;

// Runs f(engine) with the GIL released. The reference taken here keeps the engine alive through a
// close() from another thread, and is dropped before the GIL is taken back, so that the engine,
// if this was its last reference, is destroyed without the GIL (its completions may need it).
template <typename F>
auto without_gil(const Handle& h, F&& f) {
  std::shared_ptr<Engine> e = h->share();
  py::gil_scoped_release nogil;
  auto result = f(*e);
  e.reset();
  return result;
}

// A wait with the GIL released that a Ctrl-C can end: the engine asks about every 20 ms
// (spyre_dma/wait_interrupt.hpp) and the check runs the interpreter's signal handlers; when one
// raises (KeyboardInterrupt), the wait gives up and that exception is raised here. The work waited
// for goes on.
template <typename F>
Status interruptible_wait(F&& wait) {
  bool raised = false;
  Status st;
  {
    py::gil_scoped_release nogil;
    WaitInterruptScope scope([&raised] {
      py::gil_scoped_acquire gil;
      raised = PyErr_CheckSignals() != 0;  // the handler's exception stays set for the raise below
      return raised;
    });
    st = wait();
  }
  if (raised) throw py::error_already_set();
  return st;
}

// A poll (Op.done, Stream.query, Event.query). On a host-driven device it is also a step of the
// simulation, which can take a while, so other Python threads run meanwhile; elsewhere it is a
// read, cheaper than releasing the GIL.
template <typename F>
bool poll(const Handle& h, F&& f) {
  if (!h->host_driven()) return f();
  py::gil_scoped_release nogil;
  return f();
}

// Engines not yet garbage, for close_all() at interpreter exit.
std::vector<std::weak_ptr<EngineHandle>>& live_engines() {
  static std::vector<std::weak_ptr<EngineHandle>> engines;
  return engines;
}

struct PyOp {
  Handle h;
  Op op;
};
struct PyEvent {
  Handle h;
  Event event;
};
struct PyDeviceBuffer {
  Handle h;
  DeviceBuffer buffer;
};
struct PyHostBuffer {
  Handle h;
  HostBuffer buffer;
  py::object memory;      // the registered Python object's buffer (None for allocate_host)
  bool writable = true;   // false when the registered memory is read-only: exported read-only
  Py_ssize_t exports = 0;  // buffers handed out and not yet released (under the GIL)
};

// HostBuffer's buffer protocol, written out rather than through pybind11's def_buffer so that the
// exports are counted (release() refuses while one is alive, as a bytearray refuses to resize)
// and read-only registrations export read-only buffers (a D2H into one is refused).
int host_buffer_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  PyHostBuffer* b = nullptr;
  try {
    b = py::handle(self).cast<PyHostBuffer*>();
  } catch (const std::exception&) {
    PyErr_SetString(PyExc_BufferError, "not a spyre_dma.HostBuffer");
    return -1;
  }
  if (!b->buffer.data()) {
    PyErr_SetString(PyExc_BufferError, "the host buffer was released");
    return -1;
  }
  if ((flags & PyBUF_WRITABLE) != 0 && !b->writable) {
    PyErr_SetString(PyExc_BufferError, "the host buffer registers read-only memory: it cannot be written");
    return -1;
  }
  if (PyBuffer_FillInfo(view, self, b->buffer.data(), static_cast<Py_ssize_t>(b->buffer.size()), !b->writable, flags) != 0) {
    return -1;
  }
  ++b->exports;
  return 0;
}

void host_buffer_releasebuffer(PyObject* self, Py_buffer*) {
  try {
    --py::handle(self).cast<PyHostBuffer*>()->exports;
  } catch (const std::exception&) {
  }
}

struct PyStream {
  Handle h;
  Stream stream;
};

// The completion callback of an op that holds Python objects: it runs `on_complete` (if any) with
// the GIL, then marks the op done so that the handle may drop what it held. Two plain pointers:
// std::function keeps it without an allocation, so neither this thread nor the completing one
// touches the heap per op (the two would contend for the allocator's lock).
Callback completion(DoneFlag* done, const py::object& on_complete) {
  PyObject* fn = on_complete.is_none() ? nullptr : on_complete.ptr();  // held by the handle
  return [done, fn](const Status& s) {
    if (fn) {
      py::gil_scoped_acquire gil;
      try {
        py::handle{fn}(s);
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("on_complete callback of a spyre_dma op");
      }
    }
    done->store(true, std::memory_order_release);
  };
}

// Submits with the GIL released. `keep` (memory and callables the op uses) is held until the op
// completes; with nothing to keep the op needs no completion callback at all.
template <typename Submit>
PyOp submit(PyStream& s, py::object keep, const py::object& on_complete, Submit&& fn) {
  if (keep.is_none() && on_complete.is_none()) {
    Op op;
    {
      py::gil_scoped_release nogil;
      op = fn(Callback{});
    }
    return PyOp{s.h, std::move(op)};
  }
  DoneFlag* done = s.h->take_flag();
  Callback cb = completion(done, on_complete);
  Op op;
  try {
    py::gil_scoped_release nogil;
    op = fn(std::move(cb));
  } catch (...) {
    done->store(true, std::memory_order_relaxed);  // refused: back to the pool at the next prune
    s.h->keep(done, py::object());
    throw;
  }
  s.h->keep(done, on_complete.is_none() ? std::move(keep) : py::make_tuple(keep, on_complete));
  return PyOp{s.h, std::move(op)};
}

std::uint64_t transfer_bytes(const std::optional<std::uint64_t>& nbytes, std::size_t host_bytes, const char* role) {
  if (!nbytes) return host_bytes;
  if (*nbytes > host_bytes)
    throw InvalidArgument(fmt::format("nbytes {}: more than the {} bytes of {}", *nbytes, host_bytes, role));
  return *nbytes;
}

std::uint64_t rest_of(const DeviceBuffer& b, std::uint64_t offset, const char* role) {
  if (offset > b.size())
    throw InvalidArgument(fmt::format("{} offset {}: past the end of the {}-byte buffer", role, offset, b.size()));
  return b.size() - offset;
}

template <typename T>
void set_if(const std::optional<T>& value, T& field) {
  if (value) field = *value;
}

CompletionMode completion_mode(const std::string& name) {
  if (name == "auto") return CompletionMode::kAuto;
  if (name == "poller") return CompletionMode::kPollerThread;
  if (name == "caller") return CompletionMode::kCallerDriven;
  throw InvalidArgument(fmt::format("completion \"{}\": expected auto, poller or caller", name));
}
const char* completion_name(CompletionMode m) {
  switch (m) {
    case CompletionMode::kAuto: return "auto";
    case CompletionMode::kPollerThread: return "poller";
    case CompletionMode::kCallerDriven: return "caller";
  }
  return "auto";
}
Ordering ordering(const std::string& name) {
  if (name == "strict") return Ordering::kStrict;
  if (name == "op_ordered") return Ordering::kOpOrdered;
  if (name == "pipeline_fifo") return Ordering::kPipelineFifo;
  throw InvalidArgument(fmt::format("ordering \"{}\": expected strict, op_ordered or pipeline_fifo", name));
}
FailurePolicy failure_policy(const std::string& name) {
  if (name == "isolate") return FailurePolicy::kIsolate;
  if (name == "propagate") return FailurePolicy::kPropagate;
  throw InvalidArgument(fmt::format("on_failure \"{}\": expected isolate or propagate", name));
}

std::string setting_value(py::handle v) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  return py::str(v);
}

struct OpenArgs {
  std::string backend;
  std::optional<std::string> preset, config, fidelity;
  py::object settings;
  std::optional<std::uint64_t> seed;
  bool capture = false;
  std::optional<std::uint64_t> max_cb_bytes;
  std::optional<std::size_t> staging_buffer_bytes, staging_buffers;
  std::optional<unsigned> staging_threads;
  py::object cb_timeout, poll_spin;
  std::optional<std::array<std::uint32_t, 3>> ring_slots;
  std::optional<std::string> completion;
  std::optional<std::uint64_t> device_memory_bytes;
  std::optional<std::uint64_t> priority_share_bytes;
  py::object priority_hold;
  bool order_by_footprint = false;
};

Handle open_engine(const OpenArgs& a) {
  backend::Settings settings;
  if (!a.settings.is_none())
    for (const auto& [k, v] : a.settings.cast<py::dict>()) settings.values[py::str(k)] = setting_value(v);
  if (a.preset) settings.values["preset"] = *a.preset;
  if (a.config) settings.values["config"] = *a.config;
  if (a.fidelity) settings.values["fidelity"] = *a.fidelity;
  settings.seed = a.seed;

  EngineOptions o;
  set_if(a.max_cb_bytes, o.max_cb_bytes);
  set_if(a.staging_buffer_bytes, o.staging_buffer_bytes);
  set_if(a.staging_buffers, o.staging_buffers);
  set_if(a.staging_threads, o.staging_threads);
  set_if(a.ring_slots, o.ring_slots);
  set_if(a.device_memory_bytes, o.device_memory_bytes);
  o.cb_timeout = seconds_to_timeout(a.cb_timeout, o.cb_timeout);
  o.poll_spin = seconds_to_timeout(a.poll_spin, o.poll_spin);
  set_if(a.priority_share_bytes, o.priority_share_bytes);
  o.priority_hold = seconds_to_timeout(a.priority_hold, o.priority_hold);
  o.order_by_footprint = a.order_by_footprint;
  if (a.completion) o.completion = completion_mode(*a.completion);

  const backend::Registry& registry = backend::builtin();
  std::shared_ptr<traces::TraceRecorder> recorder;
  backend::Instance instance;
  std::shared_ptr<Engine> engine;
  {
    py::gil_scoped_release nogil;
    instance = registry.open(a.backend, settings);
    if (a.capture) {
      recorder = std::make_shared<traces::TraceRecorder>(
          traces::capture_header(a.backend, instance, registry.configuration(a.backend, settings)));
      o.observer = recorder;
    }
    engine = Engine::open(instance.device, o);
  }
  auto h = std::make_shared<EngineHandle>(a.backend, std::move(instance), std::move(engine), std::move(recorder));
  auto& live = live_engines();
  live.erase(std::remove_if(live.begin(), live.end(), [](const auto& w) { return w.expired(); }), live.end());
  live.push_back(h);
  return h;
}

py::dict stats_dict(const EngineStats& s) {
  py::dict d;
  d["ops_submitted"] = s.ops_submitted;
  d["ops_completed"] = s.ops_completed;
  d["ops_failed"] = s.ops_failed;
  d["cbs_submitted"] = s.cbs_submitted;
  d["cbs_completed"] = s.cbs_completed;
  d["doorbells"] = s.doorbells;
  d["bytes_h2d"] = s.bytes_h2d;
  d["bytes_d2h"] = s.bytes_d2h;
  d["bytes_d2d"] = s.bytes_d2d;
  d["bytes_fill"] = s.bytes_fill;
  d["bytes_staged"] = s.bytes_staged;
  d["queue_full_stalls"] = s.queue_full_stalls;
  d["staging_stalls"] = s.staging_stalls;
  d["priority_yields"] = s.priority_yields;
  d["footprint_waits"] = s.footprint_waits;
  d["tags_in_use"] = s.tags_in_use;
  d["quarantined_tags"] = s.quarantined_tags;
  d["quarantined_staging"] = s.quarantined_staging;
  d["device_faults"] = s.device_faults;
  d["device_memory_allocated"] = s.device_memory_allocated;
  return d;
}

py::dict limits_dict(const DeviceLimits& l) {
  py::dict d;
  d["id"] = l.id;
  d["version"] = l.version;
  d["capabilities"] = l.capabilities;
  d["depth"] = py::make_tuple(l.depth[0], l.depth[1], l.depth[2]);
  d["ring_slots"] = py::make_tuple(l.ring_slots[0], l.ring_slots[1], l.ring_slots[2]);
  d["max_cb_bytes"] = l.max_cb_bytes;
  d["device_memory_bytes"] = l.device_memory_bytes;
  d["device_memory_usable"] = l.device_memory_usable;
  return d;
}

py::dict options_dict(const EngineOptions& o) {
  py::dict d;
  d["max_cb_bytes"] = o.max_cb_bytes;
  d["staging_buffer_bytes"] = o.staging_buffer_bytes;
  d["staging_buffers"] = o.staging_buffers;
  d["staging_threads"] = o.staging_threads;
  d["cb_timeout"] = std::chrono::duration<double>(o.cb_timeout).count();
  d["ring_slots"] = py::make_tuple(o.ring_slots[0], o.ring_slots[1], o.ring_slots[2]);
  d["completion"] = completion_name(o.completion);
  d["poll_spin"] = std::chrono::duration<double>(o.poll_spin).count();
  d["device_memory_bytes"] = o.device_memory_bytes;
  d["priority_share_bytes"] = o.priority_share_bytes;
  d["priority_hold"] = std::chrono::duration<double>(o.priority_hold).count();
  d["order_by_footprint"] = o.order_by_footprint;
  d["capture"] = o.observer != nullptr;
  return d;
}

// Engine.batch(): a context manager deferring doorbells (Engine::SubmitBatch).
struct PyBatch {
  Handle h;
  std::optional<Engine::SubmitBatch> batch;
};

constexpr const char* kEngineDoc = R"(A DMA engine on one device of a registered backend.

    Engine(backend="sim", *, preset=None, config=None, fidelity=None, settings=None, seed=None,
           capture=False, max_cb_bytes=None, staging_buffer_bytes=None, staging_buffers=None,
           staging_threads=None, cb_timeout=None, ring_slots=None, completion=None,
           poll_spin=None, device_memory_bytes=None, priority_share_bytes=None,
           priority_hold=None, order_by_footprint=False)

backend is a name from spyre_dma.backends() (refdev, sim, rtl, cuda). preset, config (a model
configuration file) and fidelity ("tlp" or "burst") are the model backends' settings; settings
gives any other by name (as the spyre-dma command line does). seed seeds backends that draw
random numbers. capture=True records every op for captured_trace(). The remaining keywords are
the engine's options (spyre_dma/options.hpp); times are in seconds, completion is "auto",
"poller" or "caller".

Use it as a context manager, or call close(): both wait for in-flight work and release the
device (a simulated device is one per process at a time).)";

}  // namespace

void bind_engine(py::module_& m) {
  py::enum_<OpKind>(m, "OpKind", "What an operation does.")
      .value("H2D", OpKind::kH2D)
      .value("D2H", OpKind::kD2H)
      .value("D2D", OpKind::kD2D)
      .value("FILL", OpKind::kFill)
      .value("COMPUTE", OpKind::kCompute)
      .value("HOST_CALLBACK", OpKind::kHostCallback)
      .value("EVENT_RECORD", OpKind::kEventRecord)
      .value("EVENT_WAIT", OpKind::kEventWait)
      .value("HOST_TASK", OpKind::kHostTask);

  py::class_<PyOp>(m, "Op", "The handle of one submitted operation. Every op completes exactly once.")
      .def_property_readonly("id", [](const PyOp& o) { return o.op.id(); },
                             "Unique per engine, increasing in submission order.")
      .def_property_readonly("kind", [](const PyOp& o) { return o.op.kind(); })
      .def("done", [](const PyOp& o) { return poll(o.h, [&] { return o.op.done(); }); },
           "Whether the op has completed. On a simulated device each call is also a step of progress,\n"
           "so polling alone sees the op finish.")
      .def("status", [](const PyOp& o) { return o.op.status(); },
           "The final Status once done() (WAIT_TIMEOUT while pending).")
      .def(
          "wait",
          [](const PyOp& o, const py::object& timeout) {
            const auto t = seconds_to_timeout(timeout, kDefaultWait);
            raise_if_error(interruptible_wait([&] { return o.op.wait(t); }));
          },
          py::arg("timeout") = py::none(),
          "Waits until the op completes (timeout in seconds; None: the engine's default). Raises the\n"
          "op's error (spyre_dma.Error subclasses), or WaitTimeout if it gave up.")
      .def_property_readonly("device_start_ns", [](const PyOp& o) { return o.op.device_start_ns(); },
                             "Device time of the op's first CB start (ns; 0 without device timestamps).")
      .def_property_readonly("device_end_ns", [](const PyOp& o) { return o.op.device_end_ns(); },
                             "Device time of the op's last CB end (ns; 0 without device timestamps).")
      .def_property_readonly("host_start_ns", [](const PyOp& o) { return o.op.host_start_ns(); },
                             "The call that submitted the op, on the device's clock (ns; 0 without a host clock).")
      .def_property_readonly("host_end_ns", [](const PyOp& o) { return o.op.host_end_ns(); },
                             "When the engine saw the op complete, its staging copies done, on the device's clock\n"
                             "(ns; 0 without a host clock).")
      .def("__repr__", [](const PyOp& o) {
        return fmt::format("<spyre_dma.Op {} {}>", o.op.id(), o.op.done() ? "done" : "pending");
      });

  py::class_<PyEvent>(m, "Event",
                      "Orders work across streams: Stream.record(e) marks a point, Stream.wait(e) holds another\n"
                      "stream's later ops until everything before the mark has completed.")
      .def("query", [](const PyEvent& e) { return poll(e.h, [&] { return e.event.query(); }); },
           "True when never recorded, or when everything before its latest record has completed.")
      .def(
          "synchronize",
          [](const PyEvent& e, const py::object& timeout) {
            const auto t = seconds_to_timeout(timeout, kDefaultWait);
            raise_if_error(interruptible_wait([&] { return e.event.synchronize(t); }));
          },
          py::arg("timeout") = py::none(), "Waits for the latest record; raises as Op.wait does.")
      .def_property_readonly("device_time_ns", [](const PyEvent& e) { return e.event.device_time_ns(); },
                             "The device's clock (ns) at the latest record; 0 until it completes.")
      .def(
          "elapsed_since", [](const PyEvent& e, const PyEvent& start) { return e.event.elapsed_since(start.event).count(); },
          py::arg("start"),
          "Device time (int ns) from start's latest record to this event's, as cudaEventElapsedTime;\n"
          "simulated time on sim and rtl. Raises InvalidArgument unless both are recorded and complete.");

  py::class_<PyDeviceBuffer>(m, "DeviceBuffer",
                             "A device allocation: one or more chunks of device memory forming one buffer.")
      .def_property_readonly("size", [](const PyDeviceBuffer& b) { return b.buffer.size(); }, "Bytes requested.")
      .def_property_readonly("id", [](const PyDeviceBuffer& b) { return b.buffer.id(); })
      .def_property_readonly(
          "chunks",
          [](const PyDeviceBuffer& b) {
            py::list out;
            for (const DeviceChunk& c : b.buffer.address().chunks()) {
              py::dict d;
              d["segment"] = c.segment;
              d["offset"] = c.offset;
              d["size"] = c.size;
              d["physical"] = c.physical();
              out.append(std::move(d));
            }
            return out;
          },
          "The chunks (segment, offset, size, physical address), in logical order.")
      .def("__len__", [](const PyDeviceBuffer& b) { return b.buffer.size(); })
      .def("__repr__", [](const PyDeviceBuffer& b) {
        return fmt::format("<spyre_dma.DeviceBuffer {}: {} bytes in {} chunk(s)>", b.buffer.id(), b.buffer.size(),
                           b.buffer.address().chunks().size());
      });

  py::class_<PyHostBuffer> host_buffer(
      m, "HostBuffer", py::buffer_protocol(),
      "Registered (pinned, DMA-mapped) host memory. Copies from or to any address inside it\n"
      "are DMA'd directly. It has the buffer protocol: numpy.frombuffer(hb, dtype) views it (read-only\n"
      "when the registered memory is).");
  auto* heap_type = reinterpret_cast<PyHeapTypeObject*>(host_buffer.ptr());
  heap_type->as_buffer.bf_getbuffer = host_buffer_getbuffer;
  heap_type->as_buffer.bf_releasebuffer = host_buffer_releasebuffer;
  host_buffer
      .def_property_readonly("size", [](const PyHostBuffer& b) { return b.buffer.size(); })
      .def_property_readonly("address", [](const PyHostBuffer& b) { return reinterpret_cast<std::uintptr_t>(b.buffer.data()); })
      .def_property_readonly("iova", [](const PyHostBuffer& b) { return b.buffer.iova(); })
      .def_property_readonly("writable", [](const PyHostBuffer& b) { return b.writable; },
                             "False when the registered memory is read-only (it can be copied from only).")
      .def(
          "release",
          [](PyHostBuffer& b) {
            if (b.exports > 0) {
              throw py::buffer_error(fmt::format("the host buffer has {} export(s) alive (memoryviews, numpy arrays "
                                                 "over it): drop them before release()",
                                                 b.exports));
            }
            b.buffer.release();
          },
          "Removes the registration at once (new copies stage); the unmap follows the last op using it.\n"
          "Raises BufferError while a memoryview or numpy array over the buffer is alive.")
      .def("__len__", [](const PyHostBuffer& b) { return b.buffer.size(); })
      .def("__repr__", [](const PyHostBuffer& b) {
        return fmt::format("<spyre_dma.HostBuffer {} bytes at iova {:#x}>", b.buffer.size(), b.buffer.iova());
      });

  py::class_<PyStream>(m, "Stream",
                       "An ordered, asynchronous queue of operations. Submission never waits for the device; an\n"
                       "invalid request raises InvalidArgument and submits nothing. Host memory is any object with\n"
                       "the buffer protocol or a CPU torch tensor, used in place (no copy): it stays alive until\n"
                       "the op completes. on_complete(status) runs once, on a thread inside the engine.")
      .def(
          "copy_h2d",
          [](PyStream& s, const PyDeviceBuffer& dst, py::handle src, std::uint64_t dst_offset,
             std::optional<std::uint64_t> nbytes, const py::object& on_complete) {
            HostRange r = host_range(src, false, "src");
            const std::uint64_t n = transfer_bytes(nbytes, r.bytes, "src");
            const void* p = r.data;
            return submit(s, std::move(r.keep), on_complete, [&](Callback cb) {
              return s.stream.copy_h2d(dst.buffer, dst_offset, p, n, std::move(cb));
            });
          },
          py::arg("dst"), py::arg("src"), py::arg("dst_offset") = 0, py::arg("nbytes") = py::none(),
          py::arg("on_complete") = py::none(),
          "Host -> device: nbytes (default: all of src) from src to dst at dst_offset (a multiple of 128).")
      .def(
          "copy_d2h",
          [](PyStream& s, py::handle dst, const PyDeviceBuffer& src, std::uint64_t src_offset,
             std::optional<std::uint64_t> nbytes, const py::object& on_complete) {
            HostRange r = host_range(dst, true, "dst");
            const std::uint64_t n = transfer_bytes(nbytes, r.bytes, "dst");
            void* p = r.data;
            return submit(s, std::move(r.keep), on_complete, [&](Callback cb) {
              return s.stream.copy_d2h(p, src.buffer, src_offset, n, std::move(cb));
            });
          },
          py::arg("dst"), py::arg("src"), py::arg("src_offset") = 0, py::arg("nbytes") = py::none(),
          py::arg("on_complete") = py::none(),
          "Device -> host: nbytes (default: all of dst) from src at src_offset into dst (writable).")
      .def(
          "copy_d2d",
          [](PyStream& s, const PyDeviceBuffer& dst, const PyDeviceBuffer& src, std::uint64_t dst_offset,
             std::uint64_t src_offset, std::optional<std::uint64_t> nbytes, const py::object& on_complete) {
            const std::uint64_t n = nbytes ? *nbytes : rest_of(src.buffer, src_offset, "src");
            return submit(s, py::none(), on_complete, [&](Callback cb) {
              return s.stream.copy_d2d(dst.buffer, dst_offset, src.buffer, src_offset, n, std::move(cb));
            });
          },
          py::arg("dst"), py::arg("src"), py::arg("dst_offset") = 0, py::arg("src_offset") = 0,
          py::arg("nbytes") = py::none(), py::arg("on_complete") = py::none(),
          "Device -> device (the ranges must not overlap); nbytes defaults to the rest of src.")
      .def(
          "fill",
          [](PyStream& s, const PyDeviceBuffer& dst, std::uint32_t pattern, std::uint64_t offset,
             std::optional<std::uint64_t> nbytes, const py::object& on_complete) {
            const std::uint64_t n = nbytes ? *nbytes : rest_of(dst.buffer, offset, "dst");
            return submit(s, py::none(), on_complete, [&](Callback cb) {
              return s.stream.fill(dst.buffer, offset, n, pattern, std::move(cb));
            });
          },
          py::arg("dst"), py::arg("pattern"), py::arg("offset") = 0, py::arg("nbytes") = py::none(),
          py::arg("on_complete") = py::none(),
          "Fills the range (default: the rest of dst) with a 32-bit little-endian pattern.")
      .def(
          "compute",
          [](PyStream& s, std::int64_t duration_ns, const py::object& on_complete) {
            if (duration_ns < 0) throw InvalidArgument(fmt::format("duration_ns {}: expected >= 0", duration_ns));
            return submit(s, py::none(), on_complete, [&](Callback cb) {
              return s.stream.compute(std::chrono::nanoseconds(duration_ns), std::move(cb));
            });
          },
          py::arg("duration_ns"), py::arg("on_complete") = py::none(),
          "A timed placeholder kernel on the COMPUTE pipeline: takes duration_ns on the device.")
      .def(
          "host_callback",
          [](PyStream& s, const py::function& fn, const py::object& on_complete) {
            PyObject* f = fn.ptr();  // held by the handle until the op completes
            return submit(s, fn, on_complete, [&](Callback cb) {
              return s.stream.host_callback(
                  [f] {
                    py::gil_scoped_acquire gil;
                    try {
                      py::handle{f}();
                    } catch (py::error_already_set& e) {
                      throw std::runtime_error(e.what());  // fails the op with CallbackFailed, the text kept
                    }
                  },
                  std::move(cb));
            });
          },
          py::arg("fn"), py::arg("on_complete") = py::none(),
          "Runs fn() once every earlier op of the stream has completed, on the thread inside the engine\n"
          "that finds it ready (an engine thread, one that waits or polls, or this one at submission\n"
          "when nothing before it is pending); later ops wait for it. An exception from fn fails the op\n"
          "with CallbackFailed (its text in the message) and the stream's later ops with DependencyFailed.")
      .def(
          "record", [](PyStream& s, const PyEvent& e) { return submit(s, py::none(), py::none(), [&](Callback) { return s.stream.record(e.event); }); },
          py::arg("event"))
      .def(
          "wait", [](PyStream& s, const PyEvent& e) { return submit(s, py::none(), py::none(), [&](Callback) { return s.stream.wait(e.event); }); },
          py::arg("event"))
      .def("query", [](const PyStream& s) { return poll(s.h, [&] { return s.stream.query(); }); },
           "True when every op submitted so far has completed (a step of progress on a simulated device).")
      .def(
          "synchronize",
          [](PyStream& s, const py::object& timeout) {
            const auto t = seconds_to_timeout(timeout, kDefaultWait);
            const Status st = interruptible_wait([&] { return s.stream.synchronize(t); });
            if (!s.h->closed()) s.h->prune();
            raise_if_error(st);
          },
          py::arg("timeout") = py::none(),
          "Waits for every op submitted so far; raises the first error any of them completed with since\n"
          "the previous synchronize (which clears it), or WaitTimeout.")
      .def("error", [](const PyStream& s) { return s.stream.error(); },
           "The first error since the last synchronize (a Status), without waiting or clearing.")
      .def_property_readonly("id", [](const PyStream& s) { return s.stream.id(); })
      .def_property_readonly("name", [](const PyStream& s) { return s.stream.options().name; })
      .def_property_readonly("priority", [](const PyStream& s) { return s.stream.options().priority; })
      .def("__repr__", [](const PyStream& s) {
        return fmt::format("<spyre_dma.Stream {} '{}'>", s.stream.id(), s.stream.options().name);
      });

  py::class_<PyBatch>(m, "SubmitBatch", "Engine.batch(): doorbells deferred until the with-block ends.")
      .def("__enter__",
           [](PyBatch& b) -> PyBatch& {
             b.batch.emplace(b.h->engine().batch());
             return b;
           })
      .def("__exit__", [](PyBatch& b, const py::args&) {
        py::gil_scoped_release nogil;
        b.batch.reset();
      });

  py::class_<EngineHandle, Handle>(m, "Engine", kEngineDoc)
      .def(py::init([](const std::string& backend, std::optional<std::string> preset, std::optional<std::string> config,
                       std::optional<std::string> fidelity, py::object settings, std::optional<std::uint64_t> seed,
                       bool capture, std::optional<std::uint64_t> max_cb_bytes,
                       std::optional<std::size_t> staging_buffer_bytes, std::optional<std::size_t> staging_buffers,
                       std::optional<unsigned> staging_threads, py::object cb_timeout,
                       std::optional<std::array<std::uint32_t, 3>> ring_slots, std::optional<std::string> completion,
                       py::object poll_spin, std::optional<std::uint64_t> device_memory_bytes,
                       std::optional<std::uint64_t> priority_share_bytes, py::object priority_hold,
                       bool order_by_footprint) {
             OpenArgs a;
             a.backend = backend;
             a.preset = std::move(preset);
             a.config = std::move(config);
             a.fidelity = std::move(fidelity);
             a.settings = std::move(settings);
             a.seed = seed;
             a.capture = capture;
             a.max_cb_bytes = max_cb_bytes;
             a.staging_buffer_bytes = staging_buffer_bytes;
             a.staging_buffers = staging_buffers;
             a.staging_threads = staging_threads;
             a.cb_timeout = std::move(cb_timeout);
             a.ring_slots = ring_slots;
             a.completion = std::move(completion);
             a.poll_spin = std::move(poll_spin);
             a.device_memory_bytes = device_memory_bytes;
             a.priority_share_bytes = priority_share_bytes;
             a.priority_hold = std::move(priority_hold);
             a.order_by_footprint = order_by_footprint;
             return open_engine(a);
           }),
           py::arg("backend") = "sim", py::kw_only(), py::arg("preset") = py::none(), py::arg("config") = py::none(),
           py::arg("fidelity") = py::none(), py::arg("settings") = py::none(), py::arg("seed") = py::none(),
           py::arg("capture") = false, py::arg("max_cb_bytes") = py::none(),
           py::arg("staging_buffer_bytes") = py::none(), py::arg("staging_buffers") = py::none(),
           py::arg("staging_threads") = py::none(), py::arg("cb_timeout") = py::none(),
           py::arg("ring_slots") = py::none(), py::arg("completion") = py::none(), py::arg("poll_spin") = py::none(),
           py::arg("device_memory_bytes") = py::none(), py::arg("priority_share_bytes") = py::none(),
           py::arg("priority_hold") = py::none(), py::arg("order_by_footprint") = false)
      .def(
          "pooled_stream",
          [](const Handle& h, bool high_priority) { return PyStream{h, h->engine().pooled_stream(high_priority)}; },
          py::arg("high_priority") = false,
          "A stream from the engine's pools, handed out in turn (as torch.cuda's stream pool): priority 0,\n"
          "or 1 with high_priority, so that its copies overtake the low streams' bulk copies.")
      .def(
          "create_stream",
          [](const Handle& h, const std::string& order, int priority, const std::string& name,
             const std::string& on_failure) {
            StreamOptions o;
            o.ordering = ordering(order);
            o.priority = priority;
            o.name = name;
            o.on_failure = failure_policy(on_failure);
            return PyStream{h, h->engine().create_stream(o)};
          },
          py::arg("ordering") = "strict", py::arg("priority") = 0, py::arg("name") = "",
          py::arg("on_failure") = "isolate",
          "A new stream. ordering: strict (default), op_ordered or pipeline_fifo; higher priority runs\n"
          "first when streams compete for queue slots or staging buffers, and lower ones keep only a\n"
          "share of the device's rings while it is active (priority_share_bytes). on_failure: isolate (default:\n"
          "each op stands alone) or propagate (the ops after a failed one, and after a wait on an event\n"
          "recorded behind it, raise DependencyFailed naming it and run nothing, until a synchronize of\n"
          "the stream has raised the failure).")
      .def("create_event", [](const Handle& h) { return PyEvent{h, h->engine().create_event()}; })
      .def(
          "allocate",
          [](const Handle& h, std::uint64_t nbytes, std::uint64_t max_chunk_bytes) {
            AllocOptions o;
            o.max_chunk_bytes = max_chunk_bytes;
            return PyDeviceBuffer{h, h->engine().allocate(nbytes, o)};
          },
          py::arg("nbytes"), py::arg("max_chunk_bytes") = 0,
          "Device memory. max_chunk_bytes (a multiple of 128) cuts it into chunks of at most that size.\n"
          "Raises OutOfMemory naming the size when it cannot be satisfied.")
      .def(
          "register_host",
          [](const Handle& h, py::handle obj) {
            HostRange r = host_range(obj, false, "memory");
            HostBuffer b = without_gil(h, [&](Engine& e) { return e.register_host(r.data, r.bytes); });
            return PyHostBuffer{h, std::move(b), std::move(r.keep), r.writable, 0};
          },
          py::arg("memory"),
          "Registers (pins, maps for DMA) the memory of a buffer-protocol object or CPU tensor, held\n"
          "until the returned HostBuffer is gone: copies from or to it are DMA'd directly, unstaged.\n"
          "Read-only memory (bytes, a read-only array) registers read-only: copies into it are refused.")
      .def(
          "allocate_host",
          [](const Handle& h, std::size_t nbytes) {
            HostBuffer b = without_gil(h, [&](Engine& e) { return e.allocate_host(nbytes); });
            return PyHostBuffer{h, std::move(b), py::none(), true, 0};
          },
          py::arg("nbytes"), "Page-aligned, registered host memory (a HostBuffer).")
      .def(
          "synchronize",
          [](const Handle& h, const py::object& timeout) {
            const auto t = seconds_to_timeout(timeout, kDefaultWait);
            std::shared_ptr<Engine> engine = h->share();  // through a close() from another thread
            const Status s = interruptible_wait([&] { return engine->synchronize(t); });
            {
              py::gil_scoped_release nogil;  // the last reference may go here: without the GIL
              engine.reset();
            }
            h->prune();
            raise_if_error(s);
          },
          py::arg("timeout") = py::none(), "Waits for every op of every stream; raises the first error.")
      .def(
          "reset",
          [](const Handle& h, const py::object& timeout) {
            const auto t = seconds_to_timeout(timeout, std::chrono::seconds(10));
            raise_if_error(without_gil(h, [&](Engine& e) { return e.reset(t); }));
          },
          py::arg("timeout") = py::none(),
          "Resets the device: in-flight and queued ops complete with CANCELLED; new work then succeeds.")
      .def("batch", [](const Handle& h) { return PyBatch{h, std::nullopt}; },
           "A context manager: ops submitted inside reach the device with one doorbell per pipeline.")
      .def("stats", [](const Handle& h) { return stats_dict(h->engine().stats()); }, "The engine's counters (dict).")
      .def(
          "stalls",
          [](const Handle& h, const py::object& idle_for) {
            const auto idle = seconds_to_timeout(idle_for, std::chrono::seconds(1));
            std::vector<StreamStall> stalls;
            {
              py::gil_scoped_release nogil;
              stalls = h->engine().stalls(idle);
            }
            py::list out;
            for (const StreamStall& st : stalls) {
              py::dict d;
              d["stream"] = st.stream;
              d["name"] = st.name;
              d["idle_s"] = std::chrono::duration<double>(st.idle).count();
              d["ops_pending"] = st.ops_pending;
              d["head_op"] = st.head_op;
              d["head_kind"] = py::cast(st.head_kind);
              d["waiting_for"] = st.waiting_for;
              d["chain"] = st.chain;
              d["text"] = st.to_string();
              out.append(std::move(d));
            }
            return out;
          },
          py::arg("idle_for") = 1.0,
          "Every stream with work that has completed no op for idle_for seconds or more, and what holds\n"
          "it: a list of dicts (stream, name, idle_s, ops_pending, head_op, head_kind, waiting_for,\n"
          "chain: the streams it waits on through events, nearest first; text: all of it in one line).\n"
          "A wait that times out names the same in its message.")
      .def("limits", [](const Handle& h) { return limits_dict(h->engine().limits()); },
           "What the device reported at open and what the engine made of it (dict).")
      .def_property_readonly("options", [](const Handle& h) { return options_dict(h->engine().options()); })
      .def_property_readonly("backend", &EngineHandle::backend)
      .def_property_readonly("device_name", [](const Handle& h) { return h->engine().device().describe().name; })
      .def_property_readonly("closed", &EngineHandle::closed)
      .def(
          "simulated_time_ns",
          [](const Handle& h) -> py::object {
            const backend::Instance& i = h->instance();
            if (!i.clock) return py::none();
            return py::float_(i.clock->now_ns());
          },
          "The device's simulated time (ns) on a simulated backend, else None.")
      .def(
          "device_statistics",
          [](const Handle& h) -> py::object {
            const backend::Instance& i = h->instance();
            if (!i.statistics) return py::none();
            return to_python(i.statistics->statistics());
          },
          "What the device counted (the model's statistics tree, a dict), or None.")
      .def(
          "captured_trace",
          [](const Handle& h, const py::object& timeout) {
            if (!h->recorder()) throw InvalidArgument("captured_trace: the engine was opened without capture=True");
            const auto t = seconds_to_timeout(timeout, std::chrono::seconds(10));
            traces::Trace trace;
            {
              py::gil_scoped_release nogil;
              trace = h->recorder()->trace(t);
            }
            return make_trace_object(std::move(trace));
          },
          py::arg("timeout") = py::none(),
          "The trace of every op so far (capture=True), ops in id order; waits up to timeout for ops seen\n"
          "to complete.")
      .def("close", &EngineHandle::close,
           "Waits for in-flight work (bounded by cb_timeout), cancels the rest and releases the device.")
      .def("__enter__", [](const Handle& h) { return h; })
      .def("__exit__", [](const Handle& h, const py::args&) { h->close(); })
      .def("__repr__", [](const Handle& h) {
        return fmt::format("<spyre_dma.Engine {}{}>", h->backend(), h->closed() ? " (closed)" : "");
      });

  m.def(
      "_close_all",
      [] {
        for (auto& w : live_engines())
          if (auto h = w.lock()) h->close();
        live_engines().clear();
      },
      "Closes every engine still open (the atexit hook).");

  m.def(
      "_native_h2d_loop",
      [](PyStream& s, const PyDeviceBuffer& dst, py::handle src, std::size_t count, double period_ns) {
        HostRange r = host_range(src, false, "src");
        py::gil_scoped_release nogil;
        using Clock = std::chrono::steady_clock;
        const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(period_ns));
        Clock::duration in_calls{0};
        const auto start = Clock::now();
        for (std::size_t i = 0; i < count; ++i) {
          if (period.count() > 0)
            while (Clock::now() < start + period * static_cast<std::int64_t>(i)) {
            }
          const auto t = Clock::now();
          s.stream.copy_h2d(dst.buffer, 0, r.data, r.bytes);
          in_calls += Clock::now() - t;
        }
        const auto submitted = Clock::now();
        s.stream.synchronize().throw_if_error();
        const auto end = Clock::now();
        using S = std::chrono::duration<double>;
        // Converted to a Python tuple after the lambda returns, with the GIL taken back.
        return std::make_tuple(S(submitted - start).count(), S(end - start).count(), S(in_calls).count());
      },
      py::arg("stream"), py::arg("dst"), py::arg("src"), py::arg("count"), py::arg("period_ns") = 0.0,
      "The baseline of bench/copy_overhead.py: `count` copies of src to dst submitted by a C++ loop, then\n"
      "a synchronize; with period_ns, op i is submitted no earlier than i * period_ns after the first\n"
      "(the pace of another loop). Returns (seconds submitting, seconds in all, seconds inside the\n"
      "submit calls).");
}


// The shared host pool (spyre_dma/host_pool.hpp). Bound here: its calls take this file's stream,
// buffer and op objects.
struct PyPoolFetch {
  Handle h;
  SharedHostPool::Fetch fetch;
};

void bind_host_pool(py::module_& m) {
  py::class_<PyPoolFetch>(m, "PoolFetch", "A copy from a shared pool slot to the device (SharedHostPool.fetch).")
      .def_property_readonly("op", [](const PyPoolFetch& f) { return PyOp{f.h, f.fetch.op}; })
      .def_property_readonly("nbytes", [](const PyPoolFetch& f) { return f.fetch.bytes; })
      .def("valid", [](const PyPoolFetch& f) { return poll(f.h, [&] { return f.fetch.valid(); }); },
           "Whether the copy's bytes count: the op completed well and the slot did not change meanwhile.");

  py::class_<SharedHostPool>(m, "SharedHostPool",
                             "Host memory shared by several processes: slots a key maps to, each published only once\n"
                             "the DMA that filled it completed; a stale or half-written slot is a miss, never bytes\n"
                             "(docs/engine.md, \"A shared host pool\").")
      .def_static(
          "create",
          [](const std::string& name, std::size_t slots, std::size_t slot_bytes) {
            return SharedHostPool::create(name, {slots, slot_bytes});
          },
          py::arg("name"), py::arg("slots") = 64, py::arg("slot_bytes") = std::size_t{1} << 20,
          "Creates the pool `name` (a POSIX shared-memory name); InvalidArgument if it exists.")
      .def_static("open", &SharedHostPool::open, py::arg("name"), "Opens a pool another process created.")
      .def_static("remove", &SharedHostPool::remove, py::arg("name"), "Removes the pool's name.")
      .def_property_readonly("slots", &SharedHostPool::slots)
      .def_property_readonly("slot_bytes", &SharedHostPool::slot_bytes)
      .def("slot_of", &SharedHostPool::slot_of, py::arg("key"))
      .def("published", &SharedHostPool::published, "How many slots are published now.")
      .def(
          "register_with",
          [](SharedHostPool& p, const Handle& h) -> py::object {
            HostBuffer b = without_gil(h, [&](Engine& e) { return p.register_with(e); });
            if (!b.valid()) return py::none();
            return py::cast(PyHostBuffer{h, std::move(b), py::none(), true, 0});
          },
          py::arg("engine"),
          "Registers the pool with the engine (once per engine) so that its copies are direct; keep the\n"
          "HostBuffer it returns. None where the device cannot map it: copies are staged.")
      .def(
          "offload",
          [](SharedHostPool& p, PyStream& s, std::uint64_t key, const PyDeviceBuffer& src, std::uint64_t src_offset,
             std::optional<std::uint64_t> nbytes) -> py::object {
            const std::uint64_t n = nbytes ? *nbytes : rest_of(src.buffer, src_offset, "source");
            SharedHostPool::Offload o;
            {
              py::gil_scoped_release nogil;
              o = p.offload(s.stream, key, src.buffer, src_offset, n);
            }
            if (o.offer != SharedHostPool::Offer::kStarted) return py::none();
            return py::cast(PyOp{s.h, std::move(o.op)});
          },
          py::arg("stream"), py::arg("key"), py::arg("src"), py::arg("src_offset") = 0, py::arg("nbytes") = py::none(),
          "Copies device bytes into key's slot on `stream` and publishes the slot when the copy has\n"
          "completed well. Returns the Op (it completes after the publication), or None when a live\n"
          "writer holds the slot.")
      .def(
          "read",
          [](const SharedHostPool& p, std::uint64_t key, py::handle out) -> py::object {
            HostRange r = host_range(out, true, "out");
            std::optional<std::size_t> n;
            {
              py::gil_scoped_release nogil;
              n = p.read(key, r.data, r.bytes);
            }
            if (!n) return py::none();
            return py::int_(*n);
          },
          py::arg("key"), py::arg("out"),
          "Copies key's bytes into `out` (a writable buffer) and returns how many, or None on a miss.")
      .def(
          "fetch",
          [](SharedHostPool& p, PyStream& s, std::uint64_t key, const PyDeviceBuffer& dst,
             std::uint64_t dst_offset) -> py::object {
            std::optional<SharedHostPool::Fetch> f;
            {
              py::gil_scoped_release nogil;
              f = p.fetch(s.stream, key, dst.buffer, dst_offset);
            }
            if (!f) return py::none();
            return py::cast(PyPoolFetch{s.h, std::move(*f)});
          },
          py::arg("stream"), py::arg("key"), py::arg("dst"), py::arg("dst_offset") = 0,
          "Copies key's bytes to the device on `stream`: a PoolFetch, or None on a miss. Its bytes count\n"
          "only if valid() once its op completed.");
}

}  // namespace spyre_dma::python
