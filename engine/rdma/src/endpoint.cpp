#include "spyre_dma/rdma/endpoint.hpp"

#include <string>

namespace spyre_dma::rdma {
namespace {

// Everything a request can be refused for, checked before anything is submitted.
void check_remote(const char* what, const RemoteHandle& h, std::uint64_t offset, std::uint64_t bytes) {
  if (!h.valid()) throw InvalidArgument(std::string(what) + ": the remote handle is empty");
  h.check(what, offset, bytes).throw_if_error();
}

void check_local(const char* what, const void* p) {
  if (!p) throw InvalidArgument(std::string(what) + ": the local pointer is null");
}

// The op ends with the transfer, from the thread that completes it.
Transport::Done end_with(const TaskCompletion& done) {
  return [done](Status s) { done(std::move(s)); };
}

}  // namespace

Endpoint::Endpoint(Engine& engine, std::shared_ptr<Transport> transport)
    : engine_(engine), transport_(std::move(transport)) {
  if (!transport_) throw InvalidArgument("Endpoint: no transport");
}

Endpoint::~Endpoint() = default;

RemoteHandle Endpoint::expose(const HostBuffer& buffer) {
  if (!buffer.valid()) throw InvalidArgument("expose: the HostBuffer is empty");
  return expose(buffer, 0, buffer.size());
}

RemoteHandle Endpoint::expose(const HostBuffer& buffer, std::uint64_t offset, std::uint64_t bytes) {
  if (!buffer.valid()) throw InvalidArgument("expose: the HostBuffer is empty");
  if (bytes == 0 || offset > buffer.size() || bytes > buffer.size() - offset) {
    throw InvalidArgument("expose: [" + std::to_string(offset) + ", +" + std::to_string(bytes) + ") is not inside the " +
                          std::to_string(buffer.size()) + "-byte HostBuffer");
  }
  return transport_->expose(static_cast<std::uint8_t*>(buffer.data()) + offset, bytes);
}

RemoteHandle Endpoint::expose(const DeviceBuffer& buffer) {
  if (!buffer.valid()) throw InvalidArgument("expose: the DeviceBuffer is empty");
  return expose(buffer, 0, buffer.size());
}

RemoteHandle Endpoint::expose(const DeviceBuffer& buffer, std::uint64_t offset, std::uint64_t bytes) {
  check_device_range("expose", "range", buffer, offset, bytes);
  if (!engine_.owns(buffer)) {
    throw InvalidArgument("expose: DeviceBuffer " + std::to_string(buffer.id()) + " belongs to another engine");
  }
  const CompositeAddress::Position p = buffer.address().locate(offset);
  const DeviceChunk& chunk = buffer.address().chunks()[p.chunk];
  if (bytes > chunk.size - p.offset_in_chunk) {
    throw InvalidArgument("expose: [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                          ") spans more than one of the DeviceBuffer's " +
                          std::to_string(buffer.address().chunks().size()) +
                          " chunks; a handle is one contiguous range: expose each chunk's part");
  }
  return transport_->expose_device(engine_.device(), chunk.physical() + p.offset_in_chunk, bytes);
}

void Endpoint::revoke(const RemoteHandle& handle) { transport_->revoke(handle); }

Stream& Endpoint::shadow(const Stream& user) {
  std::lock_guard lock(mu_);
  auto it = shadows_.find(user.id());
  if (it == shadows_.end()) it = shadows_.emplace(user.id(), engine_.create_stream(user.options())).first;
  return it->second;
}

Op Endpoint::put(Stream& stream, const RemoteHandle& dst, std::uint64_t dst_offset, const void* src,
                 std::uint64_t bytes, Callback on_complete) {
  check_remote("put", dst, dst_offset, bytes);
  check_local("put", src);
  const std::shared_ptr<Transport> node = transport_;
  return stream.host_task(
      [node, dst, dst_offset, src, bytes](TaskCompletion done) {
        node->start_put(dst, dst_offset, src, bytes, end_with(done));
      },
      std::move(on_complete));
}

Op Endpoint::get(Stream& stream, void* dst, const RemoteHandle& src, std::uint64_t src_offset, std::uint64_t bytes,
                 Callback on_complete) {
  check_remote("get", src, src_offset, bytes);
  check_local("get", dst);
  const std::shared_ptr<Transport> node = transport_;
  return stream.host_task(
      [node, dst, src, src_offset, bytes](TaskCompletion done) {
        node->start_get(dst, src, src_offset, bytes, end_with(done));
      },
      std::move(on_complete));
}

// The user's stream: record(before) ... wait(copied), task(put).  The endpoint's stream for it:
// wait(before), D2H into staging, record(copied). The task starts once the D2H is done.
Op Endpoint::put(Stream& stream, const RemoteHandle& dst, std::uint64_t dst_offset, const DeviceBuffer& src,
                 std::uint64_t src_offset, std::uint64_t bytes, Callback on_complete) {
  check_remote("put", dst, dst_offset, bytes);
  check_device_range("put", "source", src, src_offset, bytes);
  HostBuffer staging = engine_.allocate_host(bytes);
  Event before = engine_.create_event(), copied = engine_.create_event();
  Stream& own = shadow(stream);
  stream.record(before);
  own.wait(before);
  const Op d2h = own.copy_d2h(staging.data(), src, src_offset, bytes);
  own.record(copied);
  stream.wait(copied);
  const std::shared_ptr<Transport> node = transport_;
  return stream.host_task(
      [node, dst, dst_offset, staging, bytes, d2h](TaskCompletion done) {
        if (Status s = d2h.status(); !s.ok()) return done(std::move(s));  // the D2H failed: nothing to put
        node->start_put(dst, dst_offset, staging.data(), bytes, end_with(done));
      },
      std::move(on_complete));
}

// The user's stream: task(get into staging), record(got) ... wait(copied), task(end). The endpoint's
// stream for it: wait(got), H2D from staging, record(copied). The op the caller gets is the last
// task: it ends once the data is in device memory, with the first error of the two steps.
Op Endpoint::get(Stream& stream, const DeviceBuffer& dst, std::uint64_t dst_offset, const RemoteHandle& src,
                 std::uint64_t src_offset, std::uint64_t bytes, Callback on_complete) {
  check_remote("get", src, src_offset, bytes);
  check_device_range("get", "destination", dst, dst_offset, bytes);
  HostBuffer staging = engine_.allocate_host(bytes);
  Event got = engine_.create_event(), copied = engine_.create_event();
  Stream& own = shadow(stream);
  const std::shared_ptr<Transport> node = transport_;
  const Op fetch = stream.host_task([node, src, src_offset, staging, bytes](TaskCompletion done) {
    node->start_get(staging.data(), src, src_offset, bytes, end_with(done));
  });
  stream.record(got);
  own.wait(got);
  // A failed get still lets the H2D run (the stream cannot skip it): the destination is then
  // undefined, as after any failed copy, and the op below fails with the get's status.
  const Op h2d = own.copy_h2d(dst, dst_offset, staging.data(), bytes);
  own.record(copied);
  stream.wait(copied);
  return stream.host_task(
      [fetch, h2d](TaskCompletion done) {
        Status s = fetch.status();
        done(s.ok() ? h2d.status() : std::move(s));
      },
      std::move(on_complete));
}

}  // namespace spyre_dma::rdma
