// Stream, Op and Event handles: request validation (everything is checked before anything is
// queued) and the hand-over to EngineCore.
#include "spyre_dma/stream.hpp"

#include <limits>
#include <string>

#include "engine_core.hpp"

namespace spyre_dma {

void check_device_range(const char* what, const char* role, const DeviceBuffer& buf, std::uint64_t offset,
                        std::uint64_t bytes) {
  auto reject_ = [&](const std::string& why) { throw InvalidArgument(std::string(what) + ": " + role + " " + why); };
  if (!buf.valid()) reject_("DeviceBuffer is empty");
  if (offset % hw::kFlitBytes != 0) reject_("offset " + std::to_string(offset) + " is not a multiple of 128");
  if (offset > buf.size() || bytes > buf.size() - offset) {
    reject_("range [" + std::to_string(offset) + ", +" + std::to_string(bytes) + ") exceeds the " +
            std::to_string(buf.size()) + "-byte buffer " + std::to_string(buf.id()));
  }
}
namespace {

using detail::AllocationState;
using detail::EngineCore;
using detail::OpState;

std::shared_ptr<EngineCore> core_of(const std::shared_ptr<detail::StreamState>& s, const char* what) {
  if (!s) throw InvalidArgument(std::string(what) + ": empty Stream handle");
  auto core = s->core.lock();
  if (!core) throw Closed(std::string(what) + ": the engine is closed");
  return core;
}

[[noreturn]] void reject(const char* what, const std::string& why) {
  throw InvalidArgument(std::string(what) + ": " + why);
}

// check_device_range, and the allocation it checked.
const std::shared_ptr<AllocationState>& check_range(const char* what, const char* role,
                                                    const DeviceBuffer& buf, std::uint64_t offset,
                                                    std::uint64_t bytes) {
  check_device_range(what, role, buf, offset, bytes);
  return buf.state();
}

// A host range must not wrap around the address space (the device range check bounds `bytes`,
// not the pointer).
void check_host_range(const char* what, const char* role, const void* p, std::uint64_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (bytes > std::numeric_limits<std::uintptr_t>::max() - a) {
    reject(what, std::string(role) + " range at " + std::to_string(a) + " (+" + std::to_string(bytes) +
                     " bytes) wraps around the address space");
  }
}

void check_owner(const char* what, const EngineCore& core, const AllocationState& a) {
  if (!core.owns(a)) reject(what, "DeviceBuffer " + std::to_string(a.id) + " belongs to another engine");
}

void check_capability(const char* what, const EngineCore& core, std::uint64_t cap, const char* name) {
  if (!(core.limits().capabilities & cap)) reject(what, std::string("the device does not support ") + name);
}

std::shared_ptr<OpState> new_op(EngineCore& core, OpKind kind, Callback&& cb) {
  auto op = core.make_op(kind);
  op->on_complete = std::move(cb);
  return op;
}

// Direct DMA needs a registration holding the whole range and a flit-aligned address (CB host
// addresses are in flits); anything else moves through staging.
void choose_host_path(EngineCore& core, OpState& op, const void* host, std::uint64_t bytes) {
  op.host = core.find_registration(host, bytes);
  const bool aligned = reinterpret_cast<std::uintptr_t>(host) % hw::kFlitBytes == 0;
  if (op.host && !aligned) op.host.reset();
  op.staged = !op.host;
}

}  // namespace

Op Stream::copy_h2d(const DeviceBuffer& dst, std::uint64_t dst_offset, const void* src,
                    std::uint64_t bytes, Callback on_complete) {
  constexpr const char* what = "copy_h2d";
  auto core = core_of(state_, what);
  if (!src) reject(what, "source pointer is null");
  if (bytes == 0) reject(what, "zero bytes");
  const auto& a = check_range(what, "destination", dst, dst_offset, bytes);
  check_host_range(what, "source", src, bytes);
  check_owner(what, *core, *a);
  auto op = new_op(*core, OpKind::kH2D, std::move(on_complete));
  op->dst = a;
  op->dst_offset = dst_offset;
  op->host_src = static_cast<const std::uint8_t*>(src);
  op->bytes = bytes;
  op->pipe = hw::Pipeline::kDmai;
  choose_host_path(*core, *op, src, bytes);
  return Op(core->submit(state_, std::move(op)));
}

Op Stream::copy_d2h(void* dst, const DeviceBuffer& src, std::uint64_t src_offset, std::uint64_t bytes,
                    Callback on_complete) {
  constexpr const char* what = "copy_d2h";
  auto core = core_of(state_, what);
  if (!dst) reject(what, "destination pointer is null");
  if (bytes == 0) reject(what, "zero bytes");
  const auto& a = check_range(what, "source", src, src_offset, bytes);
  check_host_range(what, "destination", dst, bytes);
  check_owner(what, *core, *a);
  auto op = new_op(*core, OpKind::kD2H, std::move(on_complete));
  op->src = a;
  op->src_offset = src_offset;
  op->host_dst = static_cast<std::uint8_t*>(dst);
  op->bytes = bytes;
  op->pipe = hw::Pipeline::kDmao;
  choose_host_path(*core, *op, dst, bytes);
  return Op(core->submit(state_, std::move(op)));
}

Op Stream::copy_d2d(const DeviceBuffer& dst, std::uint64_t dst_offset, const DeviceBuffer& src,
                    std::uint64_t src_offset, std::uint64_t bytes, Callback on_complete) {
  constexpr const char* what = "copy_d2d";
  auto core = core_of(state_, what);
  if (bytes == 0) reject(what, "zero bytes");
  const auto& d = check_range(what, "destination", dst, dst_offset, bytes);
  const auto& s = check_range(what, "source", src, src_offset, bytes);
  check_owner(what, *core, *d);
  check_owner(what, *core, *s);
  check_capability(what, *core, hw::kCapDeviceCopy, "device copies");
  if (d == s && dst_offset < src_offset + bytes && src_offset < dst_offset + bytes) {
    reject(what, "source [" + std::to_string(src_offset) + ", +" + std::to_string(bytes) +
                     ") and destination [" + std::to_string(dst_offset) + ", +" + std::to_string(bytes) +
                     ") overlap in buffer " + std::to_string(dst.id()));
  }
  auto op = new_op(*core, OpKind::kD2D, std::move(on_complete));
  op->dst = d;
  op->src = s;
  op->dst_offset = dst_offset;
  op->src_offset = src_offset;
  op->bytes = bytes;
  op->pipe = hw::Pipeline::kDmai;
  return Op(core->submit(state_, std::move(op)));
}

Op Stream::fill(const DeviceBuffer& dst, std::uint64_t offset, std::uint64_t bytes, std::uint32_t pattern,
                Callback on_complete) {
  constexpr const char* what = "fill";
  auto core = core_of(state_, what);
  if (bytes == 0) reject(what, "zero bytes");
  const auto& d = check_range(what, "destination", dst, offset, bytes);
  check_owner(what, *core, *d);
  check_capability(what, *core, hw::kCapFill, "fills");
  auto op = new_op(*core, OpKind::kFill, std::move(on_complete));
  op->dst = d;
  op->dst_offset = offset;
  op->bytes = bytes;
  op->pattern = pattern;
  op->pipe = hw::Pipeline::kDmai;
  return Op(core->submit(state_, std::move(op)));
}

Op Stream::compute(std::chrono::nanoseconds duration, Callback on_complete) {
  constexpr const char* what = "compute";
  auto core = core_of(state_, what);
  if (duration.count() < 0) reject(what, "negative duration " + std::to_string(duration.count()) + " ns");
  if (static_cast<std::uint64_t>(duration.count()) > hw::kMaxComputeNs) {
    reject(what, "duration " + std::to_string(duration.count()) + " ns exceeds the longest a CB carries, " +
                     std::to_string(hw::kMaxComputeNs) + " ns");
  }
  check_capability(what, *core, hw::kCapCompute, "compute");
  auto op = new_op(*core, OpKind::kCompute, std::move(on_complete));
  op->duration_ns = static_cast<std::uint64_t>(duration.count());
  op->pipe = hw::Pipeline::kCompute;
  return Op(core->submit(state_, std::move(op)));
}

std::string_view to_string(OpKind kind) noexcept {
  switch (kind) {
    case OpKind::kH2D: return "h2d";
    case OpKind::kD2H: return "d2h";
    case OpKind::kD2D: return "d2d";
    case OpKind::kFill: return "fill";
    case OpKind::kCompute: return "compute";
    case OpKind::kHostCallback: return "host_callback";
    case OpKind::kEventRecord: return "event_record";
    case OpKind::kEventWait: return "event_wait";
    case OpKind::kHostTask: return "host_task";
  }
  return "unknown";
}

Op Stream::host_callback(std::function<void()> fn, Callback on_complete) {
  constexpr const char* what = "host_callback";
  auto core = core_of(state_, what);
  if (!fn) reject(what, "empty function");
  auto op = new_op(*core, OpKind::kHostCallback, std::move(on_complete));
  op->host_fn = std::make_unique<std::function<void()>>(std::move(fn));
  return Op(core->submit(state_, std::move(op)));
}

Op Stream::host_task(std::function<void(TaskCompletion)> start, Callback on_complete) {
  constexpr const char* what = "host_task";
  auto core = core_of(state_, what);
  if (!start) reject(what, "empty function");
  auto op = new_op(*core, OpKind::kHostTask, std::move(on_complete));
  // The engine runs it as a host callback that does not complete the op by returning.
  op->host_fn = std::make_unique<std::function<void()>>(
      [start = std::move(start), done = TaskCompletion(op)] { start(done); });
  return Op(core->submit(state_, std::move(op)));
}

void TaskCompletion::operator()(Status status) const {
  const std::shared_ptr<detail::OpState> op = op_.lock();
  if (!op) return;  // completed and gone
  if (const std::shared_ptr<detail::EngineCore> core = op->core.lock()) core->finish_task(*op, std::move(status));
}

Op Stream::record(const Event& event) {
  auto core = core_of(state_, "record");
  if (!event.valid()) reject("record", "empty Event handle");
  if (event.state()->core.lock() != core) reject("record", "the Event belongs to another engine");
  return Op(core->submit_record(state_, event.state()));
}

Op Stream::wait(const Event& event) {
  auto core = core_of(state_, "wait");
  if (!event.valid()) reject("wait", "empty Event handle");
  if (event.state()->core.lock() != core) reject("wait", "the Event belongs to another engine");
  return Op(core->submit_wait(state_, event.state()));
}

bool Stream::query() const { return core_of(state_, "query")->stream_idle(*state_); }

Status Stream::synchronize(std::chrono::nanoseconds timeout) {
  return core_of(state_, "synchronize")->wait_stream(*state_, timeout, true);
}

Status Stream::error() const { return core_of(state_, "error")->stream_error(*state_); }
std::uint64_t Stream::id() const noexcept { return state_ ? state_->id : 0; }
const StreamOptions& Stream::options() const {
  if (!state_) throw InvalidArgument("options: empty Stream handle");
  return state_->options;
}

// --- Op ---------------------------------------------------------------------------------------

std::uint64_t Op::id() const noexcept { return state_ ? state_->id : 0; }
OpKind Op::kind() const noexcept { return state_ ? state_->kind : OpKind::kH2D; }
bool Op::done() const noexcept {
  if (!state_) return false;
  if (state_->done.load(std::memory_order_acquire)) return true;
  auto core = state_->core.lock();
  if (!core) return false;
  try {
    return core->op_done(*state_);  // one step of progress where nothing else makes it
  } catch (...) {  // a device that fails its step leaves the op pending; wait() reports why
    return state_->done.load(std::memory_order_acquire);
  }
}

Status Op::status() const {
  if (!state_) return Status(ErrorCode::kInvalidArgument, "empty Op handle");
  if (!state_->done.load(std::memory_order_acquire)) return Status(ErrorCode::kWaitTimeout, "op " + std::to_string(state_->id) + " still pending");
  return state_->final_status.get();
}

Status Op::wait(std::chrono::nanoseconds timeout) const {
  if (!state_) return Status(ErrorCode::kInvalidArgument, "empty Op handle");
  if (state_->done.load(std::memory_order_acquire)) return state_->final_status.get();
  auto core = state_->core.lock();
  if (!core) return Status(ErrorCode::kClosed, "op " + std::to_string(state_->id) + ": engine closed");
  return core->wait_op(*state_, timeout);
}

std::uint64_t Op::device_start_ns() const noexcept {
  return state_ && state_->done.load(std::memory_order_acquire) ? state_->start_ns : 0;
}
std::uint64_t Op::device_end_ns() const noexcept {
  return state_ && state_->done.load(std::memory_order_acquire) ? state_->end_ns : 0;
}
std::uint64_t Op::host_start_ns() const noexcept { return state_ ? state_->host_start_ns : 0; }
std::uint64_t Op::host_end_ns() const noexcept {
  return state_ && state_->done.load(std::memory_order_acquire) ? state_->host_end_ns : 0;
}

// --- Event ------------------------------------------------------------------------------------

bool Event::query() const {
  if (!state_) return true;
  auto core = state_->core.lock();
  if (!core) return true;  // a closed engine completed or cancelled everything
  return core->event_done(*state_);
}

Status Event::synchronize(std::chrono::nanoseconds timeout) const {
  if (!state_) return Status(ErrorCode::kInvalidArgument, "empty Event handle");
  auto core = state_->core.lock();
  if (!core) return Status();
  return core->wait_event(*state_, timeout);
}

std::uint64_t Event::device_time_ns() const {
  if (!state_) return 0;
  auto core = state_->core.lock();
  if (!core) return 0;
  return core->event_time_ns(*state_);
}

std::chrono::nanoseconds Event::elapsed_since(const Event& start) const {
  constexpr const char* what = "elapsed_since";
  auto time_of = [&](const Event& e, const char* role) -> std::uint64_t {
    if (!e.state_) reject(what, std::string("the ") + role + " Event handle is empty");
    auto core = e.state_->core.lock();
    if (!core) throw Closed(std::string(what) + ": the " + role + " event's engine is closed");
    if (e.state_->core.lock() != state_->core.lock()) reject(what, "the two events belong to different engines");
    if (!(core->limits().capabilities & hw::kCapTimestamps)) reject(what, "the device has no timestamps");
    const std::uint64_t t = core->event_time_ns(*e.state_);
    if (t == 0) {
      reject(what, std::string("the ") + role + " event was never recorded, its record has not completed, or it " +
                       "was cancelled");
    }
    return t;
  };
  const std::uint64_t from = time_of(start, "start");
  const std::uint64_t to = time_of(*this, "end");
  return std::chrono::nanoseconds(static_cast<std::int64_t>(to - from));
}

}  // namespace spyre_dma
