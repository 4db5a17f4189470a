// The public Engine facade over EngineCore.
#include "spyre_dma/engine.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "engine_core.hpp"
#include "spyre_dma/shareable_memory.hpp"

namespace spyre_dma {

std::unique_ptr<Engine> Engine::open(std::shared_ptr<Device> device, EngineOptions options) {
  auto core = std::make_shared<detail::EngineCore>(std::move(device), options);
  core->start();
  return std::unique_ptr<Engine>(new Engine(std::move(core)));
}

Engine::Engine(std::shared_ptr<detail::EngineCore> core) : core_(std::move(core)) {}

Engine::~Engine() {
  if (core_) core_->shutdown();
}

Stream Engine::create_stream(StreamOptions options) { return Stream(core_->create_stream(std::move(options))); }

Stream Engine::pooled_stream(bool high_priority) { return Stream(core_->pooled_stream(high_priority)); }
Event Engine::create_event() { return Event(core_->create_event()); }

DeviceBuffer Engine::allocate(std::uint64_t bytes, AllocOptions options) {
  return DeviceBuffer(core_->allocate(bytes, options));
}

bool Engine::owns(const DeviceBuffer& buffer) const noexcept {
  return buffer.valid() && core_->owns(*buffer.state());
}

HostBuffer Engine::register_host(void* ptr, std::size_t bytes) {
  return HostBuffer(core_->register_host(ptr, bytes, false));
}

HostBuffer Engine::allocate_host(std::size_t bytes) {
  if (bytes == 0) throw InvalidArgument("allocate_host: zero bytes");
  void* p = nullptr;
  try {
    p = allocate_shareable(bytes);  // shared with a device in another process (vfio-user)
  } catch (const std::bad_alloc&) {
    throw OutOfMemory("allocate_host: " + std::to_string(bytes) + " bytes");
  }
  try {
    return HostBuffer(core_->register_host(p, bytes, true));
  } catch (...) {
    free_shareable(p);
    throw;
  }
}

// A local reference: the wait runs callbacks, and one of them may destroy this Engine.
Status Engine::synchronize(std::chrono::nanoseconds timeout) {
  const auto core = core_;
  return core->wait_all(timeout);
}
Status Engine::reset(std::chrono::nanoseconds timeout) {
  const auto core = core_;
  return core->reset(timeout);
}
EngineStats Engine::stats() const { return core_->stats(); }
const DeviceLimits& Engine::limits() const { return core_->limits(); }
const EngineOptions& Engine::options() const { return core_->options(); }
Device& Engine::device() { return core_->device(); }

Engine::SubmitBatch Engine::batch() { return SubmitBatch(core_); }

Engine::SubmitBatch::SubmitBatch(std::shared_ptr<detail::EngineCore> core) : core_(std::move(core)) {
  core_->begin_batch();
}
Engine::SubmitBatch::~SubmitBatch() {
  if (core_) core_->end_batch();
}

}  // namespace spyre_dma
