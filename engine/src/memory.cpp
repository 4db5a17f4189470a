// CompositeAddress arithmetic and the DeviceBuffer / HostBuffer handles.
#include "spyre_dma/memory.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine_state.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma {

std::uint64_t DeviceChunk::physical() const noexcept {
  return std::uint64_t(segment) * hw::kSegmentBytes + offset;
}

CompositeAddress::CompositeAddress(std::vector<DeviceChunk> chunks) : chunks_(std::move(chunks)) {
  starts_.reserve(chunks_.size());
  for (const DeviceChunk& c : chunks_) {
    if (c.segment >= hw::kNumSegments || c.size == 0 || !hw::flit_aligned(c.offset) ||
        !hw::flit_aligned(c.size) || c.offset + c.size > hw::kSegmentBytes) {
      throw std::invalid_argument("device chunk (segment " + std::to_string(c.segment) + ", offset " +
                                  std::to_string(c.offset) + ", size " + std::to_string(c.size) +
                                  ") is not 128-byte aligned inside one segment");
    }
    starts_.push_back(size_);
    size_ += c.size;
  }
}

CompositeAddress::Position CompositeAddress::locate_among_chunks(std::uint64_t offset) const {
  if (offset >= size_) {
    throw std::out_of_range("offset " + std::to_string(offset) + " past a " + std::to_string(size_) +
                            "-byte device address");
  }
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  const auto index = static_cast<std::size_t>(it - starts_.begin()) - 1;
  return Position{index, offset - starts_[index]};
}

std::uint64_t DeviceBuffer::size() const noexcept { return state_ ? state_->size : 0; }
std::uint64_t DeviceBuffer::id() const noexcept { return state_ ? state_->id : 0; }
const CompositeAddress& DeviceBuffer::address() const {
  if (!state_) throw InvalidArgument("DeviceBuffer::address on an empty handle");
  return state_->address;
}

void* HostBuffer::data() const noexcept { return state_ ? state_->data : nullptr; }
std::size_t HostBuffer::size() const noexcept { return state_ ? state_->bytes : 0; }
std::uint64_t HostBuffer::iova() const noexcept { return state_ ? state_->iova : 0; }
void HostBuffer::release() {
  if (!state_) return;
  if (auto r = state_->registry.lock()) r->remove(state_.get());
  state_.reset();
}

}  // namespace spyre_dma
